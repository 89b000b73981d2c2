import Crypto
import Foundation
import _CryptoExtras

/// A Firebase service account, read from the JSON file the Firebase console issues ("Generate new private
/// key"): what the FCM client signs its OAuth2 assertions with (RS256, `iss` = ``clientEmail``, `aud` =
/// ``tokenURI``) and whose ``projectID`` names the send endpoint.
///
/// Everything is checked when the file is read, so that a wrong file is refused when an operator names it
/// (`paperboy apps add --fcm-service-account`), not at the first push. The private key never appears in
/// ``description``, ``debugDescription`` or any error.
public struct FCMServiceAccount: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The Firebase (Google Cloud) project id: `/v1/projects/{projectID}/messages:send`.
    public let projectID: String
    /// The service account's email, the assertion's `iss`.
    public let clientEmail: String
    /// The id of the private key, the assertion header's `kid`.
    public let privateKeyID: String
    /// Where access tokens come from (`https://oauth2.googleapis.com/token`), the assertion's `aud`; `http`
    /// only for a loopback host (a simulator).
    public let tokenURI: URL
    /// The RSA key the assertions are signed with.
    public let privateKey: _RSA.Signing.PrivateKey

    /// Reads and checks the service-account file at `path`.
    ///
    /// - Throws: ``FCMServiceAccount/Error`` naming the file, and the field at fault when it is read.
    public init(contentsOf path: String) throws(Error) {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            let reason = (error as NSError).localizedFailureReason ?? "it does not exist or is not readable"
            throw Error(field: nil, message: "cannot read \(path): \(reason)")
        }
        try self.init(json: data)
    }

    /// Parses and checks a service account's JSON.
    ///
    /// - Throws: ``FCMServiceAccount/Error`` naming the field at fault (`type`, `project_id`, `private_key_id`,
    ///   `private_key`, `client_email`, `token_uri`), never quoting the key.
    public init(json: Data) throws(Error) {
        guard let object = (try? JSONSerialization.jsonObject(with: json)) as? [String: Any] else {
            throw Error(field: nil, message: "not a service-account file: the content is not a JSON object")
        }
        func string(_ field: String) throws(Error) -> String {
            guard let value = object[field] else {
                throw Error(field: field, message: "missing; a service-account file from the Firebase console has it")
            }
            guard let text = value as? String, !text.isEmpty else { throw Error(field: field, message: "must be a non-empty string") }
            return text
        }
        let type = try string("type")
        guard type == "service_account" else {
            throw Error(field: "type", message: "must be \"service_account\" (got \"\(type.prefix(40))\"): is this a service-account key file?")
        }
        let projectID = try string("project_id")
        guard Self.isProjectID(projectID) else {
            throw Error(
                field: "project_id",
                message: "a project id is 6 to 30 lower-case letters, digits and '-', starting with a letter (got \"\(projectID.prefix(40))\")"
            )
        }
        let privateKeyID = try string("private_key_id")
        guard privateKeyID.count <= 128, privateKeyID.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
            throw Error(field: "private_key_id", message: "a key id is up to 128 letters and digits")
        }
        let pem = try string("private_key")
        let privateKey: _RSA.Signing.PrivateKey
        do {
            privateKey = try _RSA.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            // The key's text and the parser's error stay out of the message: either may quote the key.
            throw Error(
                field: "private_key",
                message: "not an RSA private key of 2048 bits or more in PEM (-----BEGIN PRIVATE KEY-----)"
            )
        }
        let clientEmail = try string("client_email")
        guard clientEmail.count <= 320, clientEmail.split(separator: "@", omittingEmptySubsequences: false).count == 2,
            !clientEmail.hasPrefix("@"), !clientEmail.hasSuffix("@"), !clientEmail.contains(where: \.isWhitespace)
        else {
            throw Error(field: "client_email", message: "not an email address (the service account's, like name@project.iam.gserviceaccount.com)")
        }
        let tokenURIText = try string("token_uri")
        guard let tokenURI = URL(string: tokenURIText), let scheme = tokenURI.scheme?.lowercased(), let host = tokenURI.host, !host.isEmpty else {
            throw Error(field: "token_uri", message: "not an absolute URL (like https://oauth2.googleapis.com/token)")
        }
        guard scheme == "https" || (scheme == "http" && Self.isLoopback(host)) else {
            throw Error(field: "token_uri", message: "must be https (http only for a loopback host, such as a simulator on 127.0.0.1)")
        }
        self.projectID = projectID
        self.clientEmail = clientEmail
        self.privateKeyID = privateKeyID
        self.tokenURI = tokenURI
        self.privateKey = privateKey
    }

    public var description: String {
        "FCM service account \(clientEmail) of project \(projectID) (key \(privateKeyID), token URI \(tokenURI.absoluteString))"
    }

    public var debugDescription: String { "FCMServiceAccount(\(description))" }

    /// Google Cloud's rule for project ids: 6 to 30 characters, lower-case letters, digits and hyphens, a
    /// letter first, no hyphen last.
    public static func isProjectID(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard (6...30).contains(bytes.count), let first = bytes.first, let last = bytes.last else { return false }
        func isLower(_ c: UInt8) -> Bool { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(c) }
        func isDigit(_ c: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c) }
        return isLower(first) && last != UInt8(ascii: "-") && bytes.allSatisfy { isLower($0) || isDigit($0) || $0 == UInt8(ascii: "-") }
    }

    private static func isLoopback(_ host: String) -> Bool {
        let host = host.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        return host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }
}

extension FCMServiceAccount {
    /// Why a service-account file was refused: the field at fault (a JSON key of the file) when there is one.
    public struct Error: Swift.Error, Equatable, Sendable, CustomStringConvertible {
        /// The JSON key at fault, e.g. `private_key`; nil when the file as a whole is (unreadable, not JSON).
        public var field: String?
        public var message: String

        public init(field: String?, message: String) {
            self.field = field
            self.message = message
        }

        public var description: String { field.map { "\($0): \(message)" } ?? message }
    }
}
