import APNs
import ArgumentParser
import Foundation
import NIOSSL

/// Where and as whom to send through APNs: the endpoint, the token-auth key and the topic (`paperboy push`).
/// The key, its ids and the topic are required with `--provider apns`, the default.
struct APNsOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "production, sandbox, https://host:port or http://host:port (cleartext HTTP/2, for simulators). Default: $PAPERBOY_APNS_ENDPOINT.",
            valueName: "url"
        )
    )
    var endpoint: String?

    @Option(name: .customLong("key-file"), help: ArgumentHelp("The APNs auth key (.p8, PEM PKCS#8, P-256).", valueName: "file"))
    var keyFile: String?

    @Option(name: .customLong("key-id"), help: "The auth key's id (10 characters).")
    var keyID: String?

    @Option(name: .customLong("team-id"), help: "The Apple developer team id (10 characters).")
    var teamID: String?

    @Option(help: "The app's bundle id (apns-topic).")
    var topic: String?

    /// The topic, which APNs requires.
    func requiredTopic() throws -> String {
        guard let topic else { throw CommandError("--topic: required with --provider apns") }
        return topic
    }

    @Option(
        name: .customLong("ca-file"),
        help: ArgumentHelp("Trust this PEM certificate for an https:// endpoint (a simulator's self-signed one).", valueName: "file")
    )
    var caFile: String?

    /// The endpoint from the flag, else from `PAPERBOY_APNS_ENDPOINT`.
    func resolvedEndpoint() throws -> APNsEndpoint {
        let text = endpoint ?? ProcessInfo.processInfo.environment["PAPERBOY_APNS_ENDPOINT"]
        guard let text, !text.isEmpty else {
            throw CommandError("--endpoint: give production, sandbox or a URL (or set PAPERBOY_APNS_ENDPOINT)")
        }
        do {
            return try APNsEndpoint(text)
        } catch {
            throw CommandError("--endpoint: \(error)")
        }
    }

    func signingKey() throws -> APNsSigningKey {
        guard let keyFile else { throw CommandError("--key-file: required with --provider apns") }
        guard let keyID else { throw CommandError("--key-id: required with --provider apns") }
        guard let teamID else { throw CommandError("--team-id: required with --provider apns") }
        do {
            return try APNsSigningKey(pemFile: keyFile, keyID: keyID, teamID: teamID)
        } catch {
            let flag =
                switch error.code {
                case .badKeyID: "--key-id"
                case .badTeamID: "--team-id"
                default: "--key-file"
                }
            throw CommandError("\(flag): \(error)")
        }
    }

    func clientConfiguration() throws -> APNsClient.Configuration {
        var configuration = APNsClient.Configuration(endpoint: try resolvedEndpoint())
        if let caFile {
            do {
                var tls = TLSConfiguration.makeClientConfiguration()
                tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(caFile))
                configuration.tls = tls
            } catch {
                throw CommandError("--ca-file: \(caFile) is not a readable PEM certificate (\(error))")
            }
        }
        return configuration
    }
}
