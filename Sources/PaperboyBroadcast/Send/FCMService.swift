import FCM
import Foundation
import Logging
import PaperboyCore
import PaperboyDispatch
import PaperboyStore

/// FCM as the dispatcher uses it: an app's service-account file, one client per service account
/// (``FCMClients``), the data message per tier and platform (its `ttl` the time left at the instant it is sent),
/// and FCM's answers read as ``SendRules`` says.
public struct FCMService: PushService {
    /// What a batch's FCM messages are made of; each is made at its instant, as its `ttl` is the time left then.
    public struct Pushes: Sendable {
        var edition: Edition
        var kind: BroadcastProgress.Wave.Kind
        var wave: Int
        var priority: BroadcastOptions.AndroidPriority
    }

    public static let provider = PushProvider.fcm

    let clients: FCMClients

    public init(clients: FCMClients) {
        self.clients = clients
    }

    public func credentials(of app: App) -> FCMCredentials? { app.fcm }

    public func load(_ credentials: FCMCredentials, app: App) throws(ChannelError) -> FCMServiceAccount {
        try Self.load(credentials, app: app)
    }

    /// The service account the credentials name, checked to be of the project recorded for the app.
    static func load(_ credentials: FCMCredentials, app: App) throws(ChannelError) -> FCMServiceAccount {
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

    public func fingerprint(_ secret: FCMServiceAccount) -> String {
        "\(secret.projectID)/\(secret.clientEmail)/\(secret.privateKeyID)"
    }

    public func client(for secret: FCMServiceAccount, environment: APNsEnvironment) throws -> FCMClient {
        try clients.client(for: secret)
    }

    public func pushes(for edition: Edition, batch: LeasedBatch, readyAlerts: Bool) throws -> Pushes {
        let pushes = Pushes(edition: edition, kind: batch.kind, wave: batch.wave, priority: batch.androidPriority)
        // Made once now so that a message that cannot be built stops the batch before anything is sent.
        for tier in ImageTier.allCases {
            for platform in DevicePlatform.allCases {
                _ = try message(pushes, tier: tier, platform: platform, sentAt: batch.slotStart)
            }
        }
        return pushes
    }

    public func hasReadyAlert(_ pushes: Pushes) -> Bool { false }

    public func send(
        _ items: [BatchSendMachine.Push],
        targets: [BatchTarget],
        app: App,
        pushes: Pushes,
        sentAt: Date,
        generation: Int,
        client: FCMClient,
        logger: Logger,
        report: @escaping @Sendable ([BatchSendMachine.Answer]) -> Void
    ) async {
        var made: [String: FCMMessage] = [:]
        var deliveries: [FCMDelivery] = []
        var positions: [Int] = []
        var unbuilt: [BatchSendMachine.Answer] = []
        for item in items {
            let target = targets[item.position]
            let key = target.tier.rawValue + "/" + target.platform.rawValue
            let message: FCMMessage
            do {
                if let known = made[key] {
                    message = known
                } else {
                    message = try Self.message(pushes, tier: target.tier, platform: target.platform, sentAt: sentAt)
                    made[key] = message
                }
            } catch {
                // Checked when the batch started; only the ttl changed since, so this is a message at FCM's limit.
                logger.error(
                    "an FCM message cannot be built at its instant; its device is recorded as rejected",
                    metadata: [LogKey.reason: "\(error)", LogKey.tier: "\(target.tier.rawValue)"]
                )
                unbuilt.append(
                    BatchSendMachine.Answer(
                        position: item.position,
                        result: .rejected(reason: "messageInvalid", deactivates: nil),
                        generation: generation
                    )
                )
                continue
            }
            deliveries.append(FCMDelivery(message, to: target.token.text))
            positions.append(item.position)
        }
        if !unbuilt.isEmpty { report(unbuilt) }
        let answers = AnswerGatherer(report: report)
        await client.send(deliveries) { [positions] index, result in
            let thirdPartyAuth = if case .rejected(let rejection) = result.outcome { rejection.action == .fixConfiguration } else { false }
            answers.add(SendRules.answer(result.outcome, position: positions[index], generation: generation), noting: thirdPartyAuth)
        }
        answers.flush()
        if answers.noted {
            logger.error(
                "FCM cannot reach this app's iOS devices: Firebase holds no valid APNs credentials for it (THIRD_PARTY_AUTH_ERROR); upload the APNs key in the Firebase console"
            )
        }
    }

    static func message(_ pushes: Pushes, tier: ImageTier, platform: DevicePlatform, sentAt: Date) throws -> FCMMessage {
        try Self.fcmMessage(
            for: pushes.edition,
            tier: tier,
            kind: pushes.kind,
            wave: pushes.wave,
            platform: platform,
            priority: pushes.priority,
            sentAt: sentAt
        )
    }

    private func message(_ pushes: Pushes, tier: ImageTier, platform: DevicePlatform, sentAt: Date) throws -> FCMMessage {
        try Self.message(pushes, tier: tier, platform: platform, sentAt: sentAt)
    }

    public func isUnreachable(_ client: FCMClient) -> Bool { client.isUnreachable }

    public func silenceLimit(_ client: FCMClient) -> Duration { client.silenceLimit }
}

/// The FCM channels of a dispatcher.
public typealias FCMChannels = ProviderChannels<FCMService>

extension ProviderChannels where Service == FCMService {
    /// Channels that make their clients in `clients`.
    public convenience init(clients: FCMClients) {
        self.init(service: FCMService(clients: clients))
    }
}
