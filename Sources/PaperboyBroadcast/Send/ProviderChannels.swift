import Foundation
import Logging
import PaperboyCore
import PaperboyDispatch
import PaperboyStore
import Synchronization

/// One provider as a dispatcher's list of providers holds it, whatever the provider: how an app's batch goes out
/// through it and how its credentials are read again. ``ProviderChannels`` is the one conformance.
public protocol PushChannels: Sendable {
    var provider: PushProvider { get }
    /// Whether the app has credentials for this provider.
    func isConfigured(for app: App) -> Bool
    /// The batch's way out through this provider, with the batch's pushes made.
    /// - Throws: ``PushBuildError`` when a push cannot be built.
    func way(for batch: LeasedBatch, app: App, edition: Edition) throws(PushBuildError) -> BatchWay
    /// Reads the app's credentials again after the provider refused those of `refusedGeneration`: `app` as the
    /// database has it now.
    func reload(app: App, environment: APNsEnvironment, refusedGeneration: Int) -> BatchSendMachine.Reload
}

/// Where one provider's pushes go, per app and environment: the client made from the app's credentials. The
/// secret is loaded when a batch of the app first needs it and again whenever the app's stored credentials change
/// (`paperboy apps set-apns`, `set-fcm`, which raise ``App/credentialsVersion``, read with every batch): the next
/// batch of every running worker uses the new ones, while requests already in flight finish with the old. Each
/// loaded secret that differs from the one before is a new generation: a refusal of an older generation's send is
/// sent again with the new one, never counted against it. The secret itself never reaches a log.
public final class ProviderChannels<Service: PushService>: PushChannels {
    /// How the provider stands for one app on this worker.
    public enum Lookup: Sendable {
        case ready(Service.Client, generation: Int)
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
        var generation: Int
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

    public var provider: PushProvider { Service.provider }

    public func isConfigured(for app: App) -> Bool { service.credentials(of: app) != nil }

    /// The app's client in `environment`, made from its stored credentials; loaded again when they changed.
    public func channel(app: App, environment: APNsEnvironment) -> Lookup {
        guard let credentials = service.credentials(of: app) else { return .notConfigured }
        let key = Key(appID: app.id, environment: environment)
        if let entry = entries.withLock({ $0[key] }), entry.credentials == credentials, entry.version == app.credentialsVersion {
            return .ready(entry.client, generation: entry.generation)
        }
        do {
            let entry = install(try load(credentials, app: app, environment: environment), key: key)
            return .ready(entry.client, generation: entry.generation)
        } catch {
            return .unavailable("\(error)")
        }
    }

    public func way(for batch: LeasedBatch, app: App, edition: Edition) throws(PushBuildError) -> BatchWay {
        switch channel(app: app, environment: batch.environment) {
        case .ready(let client, let generation):
            let pushes: Service.Pushes
            do {
                pushes = try service.pushes(for: edition, batch: batch, readyAlerts: batch.readyAlertsFrom != nil)
            } catch {
                throw PushBuildError(provider: provider, underlying: error)
            }
            let channel = PreparedChannel(service: service, client: client, app: app, pushes: pushes, generation: generation)
            return .ready(channel, readyAlert: service.hasReadyAlert(pushes))
        case .notConfigured:
            return .notConfigured
        case .unavailable(let reason):
            return .unavailable(reason)
        }
    }

    public func reload(app: App, environment: APNsEnvironment, refusedGeneration: Int) -> BatchSendMachine.Reload {
        guard let credentials = service.credentials(of: app) else {
            return .failed("app \(app.id) (\(app.bundleID)) has no \(Service.provider.displayName) credentials any more")
        }
        let key = Key(appID: app.id, environment: environment)
        if let current = entries.withLock({ $0[key] }), current.generation > refusedGeneration {
            // Another batch read them again already: send with those.
            return .changed(generation: current.generation)
        }
        let loaded: Entry
        do {
            loaded = try load(credentials, app: app, environment: environment)
        } catch {
            return .failed("\(error)")
        }
        let previous = entries.withLock { $0[key] }
        if let previous, previous.fingerprint == loaded.fingerprint {
            entries.withLock { $0[key]?.version = app.credentialsVersion }
            return .unchanged
        }
        return .changed(generation: install(loaded, key: key).generation)
    }

    /// Keeps `entry` as the app's, a generation after the one before when its secret differs.
    private func install(_ entry: Entry, key: Key) -> Entry {
        entries.withLock { entries in
            var entry = entry
            if let previous = entries[key] {
                entry.generation = previous.fingerprint == entry.fingerprint ? previous.generation : previous.generation + 1
            }
            entries[key] = entry
            return entry
        }
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
        return Entry(
            credentials: credentials,
            version: app.credentialsVersion,
            fingerprint: service.fingerprint(secret),
            client: client,
            generation: 1
        )
    }
}
