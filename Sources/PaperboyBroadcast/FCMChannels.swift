import FCM
import Foundation
import Logging
import PaperboyStore
import Synchronization

/// Where a broadcast's FCM messages go: per app, the FCM client of the app's service account. The account's
/// file is read once per app (it holds a private key, which never reaches a log); an app without one has no
/// channel, and its FCM devices are skipped as `fcmNotConfigured`.
public final class FCMChannels: Sendable {
    public struct Channel: Sendable {
        public var client: FCMClient
    }

    private let clients: FCMClients
    private let apps: AppRepository
    /// Per app: its channel, or nil when the app has no service account.
    private let channels = Mutex<[Int: Channel?]>([:])

    public init(clients: FCMClients, apps: AppRepository) {
        self.clients = clients
        self.apps = apps
    }

    /// The channel of an app, or nil when the app has no FCM service account.
    /// - Throws: ``ChannelError`` when the app is unknown or its service account cannot be read.
    public func channel(appID: Int, logger: Logger) async throws -> Channel? {
        if let known = channels.withLock({ $0[appID] }) { return known }
        guard let app = try await apps.find(id: appID, logger: logger) else {
            throw ChannelError(message: "app \(appID) does not exist")
        }
        let channel = try Self.loadAccount(app).map { Channel(client: try clients.client(for: $0)) }
        channels.withLock { $0[appID] = channel }
        return channel
    }

    /// The app's service account, or nil when it has none.
    /// - Throws: ``ChannelError`` naming the app and the file when the file cannot be read or is not a
    ///   service account of the project recorded for the app.
    static func loadAccount(_ app: App) throws -> FCMServiceAccount? {
        guard let credentials = app.fcm else { return nil }
        let account: FCMServiceAccount
        do {
            account = try FCMServiceAccount(contentsOf: credentials.serviceAccount)
        } catch {
            throw ChannelError(message: "app \(app.id) (\(app.bundleID)): its FCM service account \(credentials.serviceAccount): \(error)")
        }
        guard account.projectID == credentials.projectID else {
            throw ChannelError(
                message: "app \(app.id) (\(app.bundleID)): its FCM service account \(credentials.serviceAccount) is now of project "
                    + "\(account.projectID), not \(credentials.projectID) as when it was added; run paperboy apps set-fcm again"
            )
        }
        return account
    }
}
