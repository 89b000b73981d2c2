import ArgumentParser
import FCM
import Foundation
import PushTransport

/// Where and as whom to send through FCM: the endpoint and the service account.
struct FCMOptions: ParsableArguments {
    @Option(
        name: .customLong("fcm-endpoint"),
        help: ArgumentHelp(
            "https://host[:port] or http://host:port (cleartext HTTP/2, for simulators). Default: $PAPERBOY_FCM_ENDPOINT, else https://fcm.googleapis.com.",
            valueName: "url"
        )
    )
    var endpoint: String?

    @Option(
        name: .customLong("service-account"),
        help: ArgumentHelp("The Firebase service account's JSON key file (with --provider fcm).", valueName: "file")
    )
    var serviceAccount: String?

    /// The endpoint from the flag, else `PAPERBOY_FCM_ENDPOINT`, else FCM's.
    static func resolvedEndpoint(_ flag: String?) throws -> PushEndpoint {
        let text = flag ?? ProcessInfo.processInfo.environment["PAPERBOY_FCM_ENDPOINT"]
        guard let text, !text.isEmpty else { return FCMClient.Configuration.production }
        do {
            return try PushEndpoint(url: text)
        } catch {
            throw CommandError("--fcm-endpoint: FCM \(error)")
        }
    }

    func clientConfiguration() throws -> FCMClient.Configuration {
        var configuration = FCMClient.Configuration()
        configuration.endpoint = try Self.resolvedEndpoint(endpoint)
        return configuration
    }

    func account() throws -> FCMServiceAccount {
        guard let serviceAccount else { throw CommandError("--service-account: required with --provider fcm") }
        do {
            return try FCMServiceAccount(contentsOf: serviceAccount)
        } catch {
            throw CommandError("--service-account: \(error)")
        }
    }
}
