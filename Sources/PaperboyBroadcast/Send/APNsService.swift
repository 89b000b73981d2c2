import APNs
import Foundation
import Logging
import PaperboyCore
import PaperboyDispatch
import PaperboyStore

/// APNs as the dispatcher uses it: an app's token-auth key (a `.p8` file, or `env:VARIABLE` holding the PEM), one
/// client per endpoint and key (``APNsClients``), the background push per image tier and the ready alert, and
/// APNs' answers read as ``SendRules`` says.
public struct APNsService: PushService {
    /// Where an app's key lives and what names it (the Store's ``APNsCredentials``).
    public typealias Credentials = APNsCredentials

    /// What a batch's pushes are made of: each is made for its send instant (its payload's `sentAt`), at most the
    /// tiers and the ready alert once per group of targets sent together; checked once when the batch starts.
    public struct Pushes: Sendable {
        var edition: Edition
        var kind: BroadcastProgress.Wave.Kind
        var wave: Int
        var readyAlerts: Bool
    }

    public static let provider = PushProvider.apns

    let clients: APNsClients
    let endpoints: APNsEndpoints

    public init(clients: APNsClients, endpoints: APNsEndpoints) {
        self.clients = clients
        self.endpoints = endpoints
    }

    public func credentials(of app: App) -> Credentials? { Self.credentials(of: app) }

    public func load(_ credentials: Credentials, app: App) throws(ChannelError) -> APNsSigningKey {
        try Self.load(credentials, app: app)
    }

    static func credentials(of app: App) -> Credentials? { app.apns }

    static func load(_ credentials: Credentials, app: App) throws(ChannelError) -> APNsSigningKey {
        do {
            if credentials.keyReference.hasPrefix("env:") {
                let variable = String(credentials.keyReference.dropFirst(4))
                guard let pem = ProcessInfo.processInfo.environment[variable], !pem.isEmpty else {
                    throw ChannelError(
                        message: "app \(app.id) (\(app.bundleID)): the environment variable \(variable) holding its APNs key is not set"
                    )
                }
                return try APNsSigningKey(pem: pem, keyID: credentials.keyID, teamID: credentials.teamID, source: "$\(variable)")
            }
            return try APNsSigningKey(pemFile: credentials.keyReference, keyID: credentials.keyID, teamID: credentials.teamID)
        } catch let error as APNsKeyError {
            throw ChannelError(message: "app \(app.id) (\(app.bundleID)): \(error)")
        } catch let error as ChannelError {
            throw error
        } catch {
            throw ChannelError(message: "app \(app.id) (\(app.bundleID)): its APNs key cannot be loaded: \(error)")
        }
    }

    public func fingerprint(_ secret: APNsSigningKey) -> String {
        "\(secret.teamID)/\(secret.keyID)/\(secret.fingerprint)"
    }

    public func client(for secret: APNsSigningKey, environment: APNsEnvironment) throws -> APNsClient {
        try clients.client(for: secret, endpoint: endpoints.endpoint(sandbox: environment == .sandbox))
    }

    public func pushes(for edition: Edition, batch: LeasedBatch, readyAlerts: Bool) throws -> Pushes {
        let pushes = Pushes(edition: edition, kind: batch.kind, wave: batch.wave, readyAlerts: readyAlerts)
        // Made once now, at the slot's start, so that a push that cannot be built stops the batch before anything is sent.
        _ = try Self.notifications(for: edition, kind: batch.kind, wave: batch.wave, sentAt: batch.slotStart)
        if readyAlerts { _ = try Self.readyNotification(for: edition, wave: batch.wave, sentAt: batch.slotStart) }
        return pushes
    }

    public func hasReadyAlert(_ pushes: Pushes) -> Bool { pushes.readyAlerts }

    public func send(
        _ items: [BatchSendMachine.Push],
        targets: [BatchTarget],
        app: App,
        pushes: Pushes,
        sentAt: Date,
        generation: Int,
        client: APNsClient,
        logger: Logger,
        report: @escaping @Sendable ([BatchSendMachine.Answer]) -> Void
    ) async {
        var deliveries: [APNsDelivery] = []
        var positions: [Int] = []
        var unsendable: [BatchSendMachine.Answer] = []
        var made: [ImageTier: APNsNotification] = [:]
        var readyAlert: APNsNotification?
        for item in items {
            let target = targets[item.position]
            let push: APNsNotification?
            do {
                if item.readyAlert {
                    if readyAlert == nil {
                        readyAlert = try Self.readyNotification(for: pushes.edition, wave: pushes.wave, sentAt: sentAt)
                    }
                    push = readyAlert
                } else if let known = made[target.tier] {
                    push = known
                } else {
                    let built = try Self.notification(
                        for: pushes.edition,
                        tier: target.tier,
                        kind: pushes.kind,
                        wave: pushes.wave,
                        sentAt: sentAt
                    )
                    made[target.tier] = built
                    push = built
                }
            } catch {
                // Checked when the batch started; only `sentAt` changed since, so this is a payload at APNs' limit.
                logger.error(
                    "an APNs push cannot be built at its instant; its device is recorded as rejected",
                    metadata: [LogKey.reason: "\(error)", LogKey.tier: "\(target.tier.rawValue)"]
                )
                unsendable.append(
                    BatchSendMachine.Answer(
                        position: item.position,
                        result: .rejected(reason: "PayloadTooLarge", deactivates: nil),
                        generation: generation
                    )
                )
                continue
            }
            guard case .apns(let token) = target.token, let push else {
                // Never the case: the send machine hands APNs only APNs devices.
                unsendable.append(BatchSendMachine.Answer(position: item.position, result: .notSent, generation: generation))
                continue
            }
            deliveries.append(APNsDelivery(push, to: token.hex, topic: app.bundleID))
            positions.append(item.position)
        }
        if !unsendable.isEmpty { report(unsendable) }
        let answers = AnswerGatherer(report: report)
        await client.send(deliveries) { [positions] index, result in
            answers.add(SendRules.answer(result.outcome, position: positions[index], generation: generation))
        }
        answers.flush()
    }

    public func isUnreachable(_ client: APNsClient) -> Bool { client.isUnreachable }

    public func silenceLimit(_ client: APNsClient) -> Duration { client.silenceLimit }
}

/// The APNs channels of a dispatcher.
public typealias APNsChannels = ProviderChannels<APNsService>

extension ProviderChannels where Service == APNsService {
    /// Channels that make their clients in `clients`, for `endpoints`.
    public convenience init(clients: APNsClients, endpoints: APNsEndpoints) {
        self.init(service: APNsService(clients: clients, endpoints: endpoints))
    }

    /// The app's APNs key, loaded as a dispatcher loads it (``BroadcastPreflight`` checks it before a broadcast).
    static func loadKey(_ app: App) throws(ChannelError) -> APNsSigningKey {
        guard let credentials = APNsService.credentials(of: app) else {
            throw ChannelError(message: "app \(app.id) (\(app.bundleID)) has no APNs key")
        }
        return try APNsService.load(credentials, app: app)
    }
}
