import Hummingbird
import PaperboyStore

/// `GET /v1/apps` (admin): the registered apps, without their keys.
struct AppRoutes {
    let apps: AppRepository

    func add(to group: RouterGroup<APIRequestContext>, routes: inout RouteTable<APIRequestContext>) {
        group.get("apps") { _, context in
            AppList(apps: try await apps.list(logger: context.logger))
        }
        routes.record("/v1/apps", .get)
    }

    struct AppList: ResponseEncodable {
        var apps: [App]
    }
}
