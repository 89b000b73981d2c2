import Hummingbird
import PaperboyStore

/// `GET /v1/apps` (admin): the registered apps, without their keys.
struct AppRoutes {
    let apps: AppRepository

    func add(to group: RouterGroup<APIRequestContext>) {
        group.get("apps") { _, context in
            AppList(apps: try await apps.list(logger: context.logger))
        }
    }

    struct AppList: ResponseEncodable {
        var apps: [App]
    }
}
