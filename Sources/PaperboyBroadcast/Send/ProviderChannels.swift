import Foundation
import Logging
import PaperboyCore
import PaperboyStore
import Synchronization

/// Where one provider's pushes go, per app and environment: the client made from the app's credentials. The
/// secret is loaded when a batch of the app first needs it and again whenever the app's stored credentials change
/// (`paperboy apps set-apns`, `set-fcm`, which raise ``App/credentialsVersion``, read with every batch): the next
/// batch of every running worker uses the new ones, while requests already in flight finish with the old. The
/// secret itself never reaches a log.
public final class ProviderChannels<Service: PushService>: Sendable {
    /// How the provider stands for one app on this worker.
    public enum Lookup: Sendable {
        case ready(Service.Client)
        /// The app has no credentials for this provider.
        case notConfigured
        /// The app has credentials, but this worker cannot load them; the reason names the app and what is wrong.
        case unavailable(String)
    }

    private struct Entry: Sendable {
        var credentials: Service.Credentials
        /// The app's ``App/credentialsVersion`` when they were loaded: set again with the same path, the file is
        /// read again.
        var version: Int
        var fingerprint: String
        var client: Service.Client
    }

    private struct Key: Hashable {
        var appID: Int
        var environment: APNsEnvironment
    }

    let service: Service
    private let entries = Mutex<[Key: Entry]>([:])

    public init(service: Service) {
        self.service = service
    }

    /// The app's client in `environment`, made from its stored credentials; loaded again when they changed.
    public func channel(app: App, environment: APNsEnvironment) -> Lookup {
        guard let credentials = service.credentials(of: app) else { return .notConfigured }
        let key = Key(appID: app.id, environment: environment)
        if let entry = entries.withLock({ $0[key] }), entry.credentials == credentials, entry.version == app.credentialsVersion {
            return .ready(entry.client)
        }
        do {
            let entry = try load(credentials, app: app, environment: environment)
            entries.withLock { $0[key] = entry }
            return .ready(entry.client)
        } catch {
            return .unavailable("\(error)")
        }
    }

    /// Reads the app's credentials again after the provider refused them: `app` as the database has it now.
    /// - Returns: whether they changed (then the next ``channel(app:environment:)`` uses them), were the same as the
    ///   ones refused, or could not be loaded.
    func reload(app: App, environment: APNsEnvironment) -> BatchSendMachine.Reload {
        guard let credentials = service.credentials(of: app) else {
            return .failed("app \(app.id) (\(app.bundleID)) has no \(Service.provider.displayName) credentials any more")
        }
        let key = Key(appID: app.id, environment: environment)
        let entry: Entry
        do {
            entry = try load(credentials, app: app, environment: environment)
        } catch {
            return .failed("\(error)")
        }
        let previous = entries.withLock { entries in
            defer { entries[key] = entry }
            return entries[key]
        }
        return previous?.fingerprint == entry.fingerprint ? .unchanged : .changed
    }

    private func load(_ credentials: Service.Credentials, app: App, environment: APNsEnvironment) throws -> Entry {
        let secret = try service.load(credentials, app: app)
        let client: Service.Client
        do {
            client = try service.client(for: secret, environment: environment)
        } catch let error as ChannelError {
            throw error
        } catch {
            throw ChannelError(message: "app \(app.id) (\(app.bundleID)): its \(Service.provider.displayName) client cannot be made: \(error)")
        }
        return Entry(credentials: credentials, version: app.credentialsVersion, fingerprint: service.fingerprint(secret), client: client)
    }
}
