import APNs
import Foundation
import Logging
import PaperboyCore
import PaperboyStore
import Synchronization

/// Where a broadcast's pushes go: per app and environment, the APNs client (endpoint and signing key) and
/// the topic. Keys are loaded once per app from the app's key reference (a file path, or `env:VARIABLE`
/// holding the PEM); the key itself never reaches a log.
public final class APNsChannels: Sendable {
    public struct Channel: Sendable {
        public var client: APNsClient
        public var topic: String
    }

    private let clients: APNsClients
    private let endpoints: APNsEndpoints
    private let apps: AppRepository
    private let channels = Mutex<[String: Channel]>([:])

    public init(clients: APNsClients, endpoints: APNsEndpoints, apps: AppRepository) {
        self.clients = clients
        self.endpoints = endpoints
        self.apps = apps
    }

    /// The channel of an app in an environment.
    /// - Throws: ``ChannelError`` when the app is unknown or its key cannot be loaded; `APNsTransportError`
    ///   (`shutdown`) when the clients were shut down, which a dispatcher stopped first never sees.
    public func channel(appID: Int, environment: APNsEnvironment, logger: Logger) async throws -> Channel {
        let name = "\(appID)/\(environment.rawValue)"
        if let channel = channels.withLock({ $0[name] }) { return channel }
        guard let app = try await apps.find(id: appID, logger: logger) else {
            throw ChannelError(message: "app \(appID) does not exist")
        }
        let key = try Self.loadKey(app)
        let client = try clients.client(for: key, endpoint: endpoints.endpoint(sandbox: environment == .sandbox))
        let channel = Channel(client: client, topic: app.bundleID)
        channels.withLock { $0[name] = channel }
        return channel
    }

    static func loadKey(_ app: App) throws -> APNsSigningKey {
        guard let apns = app.apns else {
            throw ChannelError(message: "app \(app.id) (\(app.bundleID)) has no APNs credentials")
        }
        do {
            if apns.keyReference.hasPrefix("env:") {
                let variable = String(apns.keyReference.dropFirst(4))
                guard let pem = ProcessInfo.processInfo.environment[variable], !pem.isEmpty else {
                    throw ChannelError(
                        message: "app \(app.id) (\(app.bundleID)): the environment variable \(variable) holding its APNs key is not set"
                    )
                }
                return try APNsSigningKey(pem: pem, keyID: apns.keyID, teamID: apns.teamID, source: "$\(variable)")
            }
            return try APNsSigningKey(pemFile: apns.keyReference, keyID: apns.keyID, teamID: apns.teamID)
        } catch let error as APNsKeyError {
            throw ChannelError(message: "app \(app.id) (\(app.bundleID)): \(error)")
        }
    }
}

/// An app's pushes cannot be sent: unknown app, or its key is missing or unreadable.
public struct ChannelError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
