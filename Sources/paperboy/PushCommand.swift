import APNs
import ArgumentParser
import FCM
import Foundation
import Logging
import PaperboyCore
import PushTransport

/// `paperboy push`: one background notification (APNs) or data message (FCM) to each token, each outcome
/// printed. The tool an operator uses to check a device token, a key or a service account.
struct PushCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push",
        abstract: "Send one background notification (APNs) or data message (FCM) to each device token and print each outcome.",
        discussion: """
            Exit code 0 when the provider accepted every message, 1 otherwise. With --json, one JSON object per \
            token on standard output: {"token", "outcome": "accepted"|"rejected"|"fateUnknown"|"notSent", \
            "verdict": "accepted"|"tokenDead"|"tokenInvalid"|"credentialsRejected"|"misconfigured"|"dropped"|"unavailable"\
            |"fateUnknown"|"notSent", "status", "message"}, with "apnsId", "reason", "timestamp" for APNs and "name", "code", "action" for FCM. \
            Only the provider's own answer makes a verdict tokenDead or tokenInvalid: an answer from a proxy or a wrong \
            endpoint is misconfigured or fateUnknown. unavailable: the provider was busy or failing (429, 500, 503) \
            through this command's retries; send again later.

            With --provider fcm, the --data values that are not strings are sent as their JSON text (FCM data is \
            string to string).
            """
    )

    enum Provider: String, ExpressibleByArgument, CaseIterable {
        case apns, fcm
    }

    @Option(help: "apns (default) or fcm.")
    var provider: Provider = .apns

    @OptionGroup(title: "APNs") var apns: APNsOptions

    @OptionGroup(title: "FCM") var fcm: FCMOptions

    @Option(help: ArgumentHelp("With --provider fcm: android (default) or ios (an iOS app registered through FCM).", valueName: "platform"))
    var platform: FCMPlatform = .android

    @Option(help: ArgumentHelp("With --provider fcm and android: normal (default) or high.", valueName: "priority"))
    var priority: FCMMessage.AndroidPriority = .normal

    @Option(
        help: ArgumentHelp(
            "The app's own keys, a JSON object placed beside aps (which is always {\"content-available\": 1}).",
            valueName: "json"
        )
    )
    var data = "{}"

    @Option(help: ArgumentHelp("apns-collapse-id (at most 64 bytes).", valueName: "id"))
    var collapseID: String?

    @Option(help: ArgumentHelp("Seconds APNs keeps trying to deliver (0: now or never).", valueName: "seconds"))
    var expiresIn = 0

    @Option(name: .customLong("wait"), help: ArgumentHelp("Seconds to keep trying to connect before reporting not sent.", valueName: "seconds"))
    var waitSeconds = 10

    @Flag(help: "Print one JSON object per token, for scripts.")
    var json = false

    @Argument(help: ArgumentHelp("Device tokens: hex for APNs, FCM registration tokens for FCM.", valueName: "token"))
    var tokens: [String]

    func validate() throws {
        guard !tokens.isEmpty else { throw ValidationError("give at least one device token") }
        guard provider == .apns else {
            for token in tokens {
                do { _ = try FCMToken(token) } catch { throw ValidationError("token '\(token)': \(error)") }
            }
            guard expiresIn >= 0 else { throw ValidationError("--expires-in: must not be negative") }
            guard waitSeconds > 0 else { throw ValidationError("--wait: must be positive") }
            return
        }
        for token in tokens {
            guard (64...200).contains(token.count), token.count.isMultiple(of: 2), token.allSatisfy(\.isHexDigit) else {
                throw ValidationError("token '\(token)' is not 64 to 200 hex characters")
            }
        }
        guard expiresIn >= 0 else { throw ValidationError("--expires-in: must not be negative") }
        guard waitSeconds > 0 else { throw ValidationError("--wait: must be positive") }
    }

    func run() async throws {
        LoggingSystem.bootstrapPaperboy()
        if provider == .fcm { return try await runFCM() }
        let topic = try apns.requiredTopic()
        let key = try apns.signingKey()
        let notification = try makeNotification()
        var configuration = try apns.clientConfiguration()
        // An operator checking a device wants an answer soon, not after a minute of reconnecting.
        configuration.maximumWait = .seconds(waitSeconds)
        let client = try APNsClient(configuration: configuration, key: key, logger: Logger(label: "paperboy.push"))
        let allAccepted = await sendEach(
            tokens.map { $0.lowercased() },
            { await client.send(notification, to: $0, topic: topic) },
            line: PushLine.init(token:outcome:),
            text: Self.describe
        )
        await client.shutdown()
        if !allAccepted { throw ExitCode(1) }
    }

    /// Sends to each token in turn and prints each outcome, as JSON with `--json`.
    ///
    /// - Returns: whether the provider accepted every one.
    private func sendEach<Outcome: PushOutcome>(
        _ tokens: [String],
        _ send: (String) async -> Outcome,
        line: (String, Outcome) -> PushLine,
        text: (Outcome, String) -> String
    ) async -> Bool {
        var allAccepted = true
        for token in tokens {
            let outcome = await send(token)
            allAccepted = allAccepted && outcome.verdict == .accepted
            print(json ? line(token, outcome).jsonText : text(outcome, token))
        }
        return allAccepted
    }

    private func runFCM() async throws {
        let account = try fcm.account()
        let message = try makeFCMMessage()
        var configuration = try fcm.clientConfiguration()
        configuration.maximumWait = .seconds(waitSeconds)
        let client = try FCMClient(configuration: configuration, account: account, logger: Logger(label: "paperboy.push"))
        let allAccepted = await sendEach(tokens, { await client.send(message, to: $0) }, line: PushLine.init(token:outcome:), text: Self.describe)
        await client.shutdown()
        if !allAccepted { throw ExitCode(1) }
    }

    private func makeFCMMessage() throws -> FCMMessage {
        guard let object = try? JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any] else {
            throw CommandError("--data: must be a JSON object")
        }
        var pairs: [String: String] = [:]
        for (key, value) in object {
            if let text = value as? String {
                pairs[key] = text
            } else {
                guard
                    let encoded = try? JSONSerialization.data(
                        withJSONObject: value,
                        options: [.fragmentsAllowed, .sortedKeys, .withoutEscapingSlashes]
                    )
                else { throw CommandError("--data: the value of \(key) cannot be written as JSON") }
                pairs[key] = String(decoding: encoded, as: UTF8.self)
            }
        }
        let target: FCMMessage.Target =
            switch platform {
            case .android: .android(priority: priority, ttl: .seconds(expiresIn), collapseKey: collapseID)
            case .ios: .ios(expiration: expiresIn > 0 ? Date().addingTimeInterval(TimeInterval(expiresIn)) : nil, collapseID: collapseID)
            }
        do {
            return try FCMMessage.data(pairs, for: target)
        } catch {
            throw CommandError("--data: \(error)")
        }
    }

    static func describe(_ outcome: FCMOutcome, token: String) -> String {
        switch outcome {
        case .accepted(let name):
            "\(token)  accepted  \(name)"
        case .rejected(let rejection):
            "\(token)  rejected  \(rejection.status) \(rejection.code) (\(rejection.action))"
                + (rejection.message.isEmpty ? "" : "  \(rejection.message)")
        case .fateUnknown(let error):
            "\(token)  unknown   \(error.message) (FCM may have it; not resent)"
        case .notSent(let error):
            "\(token)  not sent  \(error.message)"
        }
    }

    private func makeNotification() throws -> APNsNotification {
        do {
            return try APNsNotification.background(
                appKeysJSON: Data(data.utf8),
                expiration: expiresIn > 0 ? Date().addingTimeInterval(TimeInterval(expiresIn)) : nil,
                collapseID: collapseID
            )
        } catch {
            throw CommandError("--data: \(error)")
        }
    }

    static func describe(_ outcome: APNsOutcome, token: String) -> String {
        switch outcome {
        case .accepted(let apnsID):
            "\(token)  accepted  apns-id \(apnsID)"
        case .rejected(let rejection):
            "\(token)  rejected  \(rejection.status) \(rejection.reason)"
                + (rejection.timestamp.map { "  invalid since \(ISO8601DateFormatter().string(from: $0))" } ?? "")
        case .fateUnknown(let error):
            "\(token)  unknown   \(error.message) (APNs may have it; not resent)"
        case .notSent(let error):
            "\(token)  not sent  \(error.message)"
        }
    }
}

/// One line of `push --json`, for either provider: the token, the outcome and what it means, and what the provider
/// said (`apnsId`, `reason`, `timestamp` from APNs; `name`, `code`, `action` from FCM).
struct PushLine: JSONLine {
    var token: String
    var outcome: String
    var verdict: String
    var status: Int?
    var message: String?
    var apnsId: String?
    var reason: String?
    var timestamp: String?
    var name: String?
    var code: String?
    var action: String?

    /// The fields every provider's outcome has.
    private init(token: String, summary: PushOutcomeSummary) {
        self.token = token
        outcome = summary.name
        verdict = summary.verdict.name
        switch summary {
        case .accepted: status = 200
        case .rejected(let status, _, _): self.status = status
        case .fateUnknown(let error), .notSent(let error): message = error.message
        }
    }

    init(token: String, outcome: APNsOutcome) {
        self.init(token: token, summary: outcome.summary)
        switch outcome {
        case .accepted(let apnsID):
            apnsId = apnsID
        case .rejected(let rejection):
            apnsId = rejection.apnsID
            reason = rejection.reason.rawValue
            timestamp = rejection.timestamp.map { ISO8601DateFormatter().string(from: $0) }
        case .fateUnknown, .notSent:
            break
        }
    }

    init(token: String, outcome: FCMOutcome) {
        self.init(token: token, summary: outcome.summary)
        switch outcome {
        case .accepted(let name):
            self.name = name
        case .rejected(let rejection):
            code = "\(rejection.code)"
            action = "\(rejection.action)"
            message = rejection.message
        case .fateUnknown, .notSent:
            break
        }
    }
}

/// The platform of an app instance registered through FCM.
enum FCMPlatform: String, ExpressibleByArgument, CaseIterable {
    case android, ios
}

extension FCMMessage.AndroidPriority: ExpressibleByArgument {}

/// One line of `--json` output: the value's JSON, keys sorted.
protocol JSONLine: Encodable {}

extension JSONLine {
    var jsonText: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(self)) ?? Data("{}".utf8), as: UTF8.self)
    }
}
