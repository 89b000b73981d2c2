import APNs
import ArgumentParser
import Foundation
import Logging
import PushTransport

/// `paperboy push`: one background notification to each token, each outcome printed. The tool an
/// operator uses to check a device token or a key.
struct PushCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push",
        abstract: "Send one background notification to each device token and print each outcome.",
        discussion: """
            Exit code 0 when APNs accepted every notification, 1 otherwise. With --json, one JSON object per
            token on standard output: {"token", "outcome": "accepted"|"rejected"|"fateUnknown"|"notSent",
            "apnsId", "status", "reason", "timestamp", "message"}.
            """
    )

    @OptionGroup var apns: APNsOptions

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

    @Argument(help: ArgumentHelp("Device tokens, hex.", valueName: "token"))
    var tokens: [String]

    func validate() throws {
        guard !tokens.isEmpty else { throw ValidationError("give at least one device token") }
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
        let key = try apns.signingKey()
        let notification = try makeNotification()
        var configuration = try apns.clientConfiguration()
        // An operator checking a device wants an answer soon, not after a minute of reconnecting.
        configuration.maximumWait = .seconds(waitSeconds)
        let client = try APNsClient(configuration: configuration, key: key, logger: Logger(label: "paperboy.push"))
        var allAccepted = true
        for token in tokens {
            let outcome = await client.send(notification, to: token.lowercased(), topic: apns.topic)
            allAccepted = allAccepted && outcome.isAccepted
            print(json ? PushLine(token: token.lowercased(), outcome: outcome).jsonText : Self.describe(outcome, token: token.lowercased()))
        }
        await client.shutdown()
        if !allAccepted { throw ExitCode(1) }
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

/// One line of `push --json`.
struct PushLine: Encodable {
    var token: String
    var outcome: String
    var apnsId: String?
    var status: Int?
    var reason: String?
    var timestamp: String?
    var message: String?

    init(token: String, outcome: APNsOutcome) {
        self.token = token
        switch outcome {
        case .accepted(let apnsID):
            self.outcome = "accepted"
            self.apnsId = apnsID
            self.status = 200
        case .rejected(let rejection):
            self.outcome = "rejected"
            self.apnsId = rejection.apnsID
            self.status = rejection.status
            self.reason = rejection.reason.rawValue
            self.timestamp = rejection.timestamp.map { ISO8601DateFormatter().string(from: $0) }
        case .fateUnknown(let error):
            self.outcome = "fateUnknown"
            self.message = error.message
        case .notSent(let error):
            self.outcome = "notSent"
            self.message = error.message
        }
    }

    var jsonText: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(self)) ?? Data("{}".utf8), as: UTF8.self)
    }
}
