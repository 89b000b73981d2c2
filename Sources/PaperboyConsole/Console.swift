import Foundation
import Hummingbird
import Logging
import PaperboyAPI
import PaperboyStore
import PostgresNIO
import ServiceLifecycle

/// The operator's web console, `/console` of `paperboy serve`: the routes to add to the API's router and the
/// sampler service that keeps each running broadcast's counters over time.
///
/// ```swift
/// let console = Console(client: client, configuration: ConsoleConfiguration(access: access, publicURL: publicURL))
/// api.moreRoutes.append { router in console.addRoutes(to: router) }
/// services.append(console.sampler(logger: logger))
/// ```
public struct Console: Sendable {
    let client: PostgresClient
    let configuration: ConsoleConfiguration

    public init(client: PostgresClient, configuration: ConsoleConfiguration) {
        self.client = client
        self.configuration = configuration
    }

    /// Adds `/console` and everything under it to `router`.
    public func addRoutes(to router: Router<APIRequestContext>) {
        let group = router.group("console", context: ConsoleRequestContext.self)
        let repository = ConsoleRepository(client: client)
        let keyring = ConsoleKeyring(access: configuration.access, source: configuration.sessionSecret, console: repository, now: configuration.now)
        group.add(middleware: ConsoleHeadersMiddleware(publicURL: configuration.publicURL))
        group.add(middleware: ConsoleErrorMiddleware())
        group.add(middleware: ConsoleSessionMiddleware(configuration: configuration, keyring: keyring, console: repository))
        ConsoleRoutes(client: client, configuration: configuration, keyring: keyring).add(to: group)
    }

    /// The service that samples running broadcasts every ``ConsoleConfiguration/sampleInterval`` (one process of
    /// those sharing the database does at a time).
    public func sampler(logger: Logger) -> ConsoleSampler {
        ConsoleSampler(client: client, configuration: configuration, logger: logger)
    }
}
