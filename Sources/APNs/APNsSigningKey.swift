import Crypto
import Foundation

/// An APNs token-auth key: the `.p8` private key (P-256) with its key id and team id.
///
/// The key material never appears in ``description`` or in errors.
public struct APNsSigningKey: Sendable, CustomStringConvertible {
    /// The 10-character key id, the JWT's `kid`.
    public let keyID: String
    /// The 10-character team id, the JWT's `iss`.
    public let teamID: String
    let privateKey: P256.Signing.PrivateKey

    /// Loads a `.p8` file (PEM, PKCS#8).
    ///
    /// - Throws: ``APNsKeyError`` naming the file when it is missing, unreadable or not a P-256 key, or
    ///   naming the id when an id is malformed.
    public init(pemFile path: String, keyID: String, teamID: String) throws(APNsKeyError) {
        guard FileManager.default.fileExists(atPath: path) else { throw APNsKeyError(code: .missing, subject: path) }
        guard let data = FileManager.default.contents(atPath: path) else { throw APNsKeyError(code: .unreadable, subject: path) }
        try self.init(pem: String(decoding: data, as: UTF8.self), keyID: keyID, teamID: teamID, source: path)
    }

    /// Uses a PEM text, e.g. from an environment variable; `source` names it in errors.
    public init(pem: String, keyID: String, teamID: String, source: String = "the PEM key") throws(APNsKeyError) {
        guard Self.isID(keyID) else { throw APNsKeyError(code: .badKeyID, subject: keyID) }
        guard Self.isID(teamID) else { throw APNsKeyError(code: .badTeamID, subject: teamID) }
        guard let key = try? P256.Signing.PrivateKey(pemRepresentation: pem) else {
            throw APNsKeyError(code: .notP256, subject: source)
        }
        self.init(privateKey: key, keyID: keyID, teamID: teamID)
    }

    init(privateKey: P256.Signing.PrivateKey, keyID: String, teamID: String) {
        self.privateKey = privateKey
        self.keyID = keyID
        self.teamID = teamID
    }

    /// A new ES256 provider token issued at `issuedAt`: `{alg: ES256, kid}` and `{iss, iat}`, signed.
    public func providerToken(issuedAt: Date) throws -> String {
        let header = Self.base64URL(Data(#"{"alg":"ES256","kid":"\#(keyID)"}"#.utf8))
        let claims = Self.base64URL(Data(#"{"iss":"\#(teamID)","iat":\#(Int(issuedAt.timeIntervalSince1970))}"#.utf8))
        let signingInput = header + "." + claims
        let signature = try privateKey.signature(for: Data(signingInput.utf8))
        return signingInput + "." + Self.base64URL(signature.rawRepresentation)
    }

    public var description: String { "APNs key \(keyID) of team \(teamID)" }

    /// What tells two keys apart without revealing either: the first 16 hex digits of the SHA-256 of the public
    /// key. A key file replaced under the same key id (a mistake corrected) has another fingerprint.
    public var fingerprint: String {
        SHA256.hash(data: privateKey.publicKey.x963Representation).prefix(8).map { String(format: "%02x", $0) }.joined()
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    private static func isID(_ text: String) -> Bool {
        text.count == 10
            && text.utf8.allSatisfy { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }
}

/// An APNs key that cannot be used. ``description`` names the file or id, never the key.
public struct APNsKeyError: Error, Equatable, CustomStringConvertible {
    public enum Code: Sendable, Equatable {
        case missing
        case unreadable
        case notP256
        case badKeyID
        case badTeamID
    }

    public var code: Code
    /// The file, or the malformed id.
    public var subject: String

    public init(code: Code, subject: String) {
        self.code = code
        self.subject = subject
    }

    public var description: String {
        switch code {
        case .missing: "APNs key file \(subject) does not exist"
        case .unreadable: "APNs key file \(subject) cannot be read (check its permissions)"
        case .notP256: "\(subject) is not a PEM-encoded P-256 private key (an APNs .p8 auth key)"
        case .badKeyID: "APNs key id '\(subject)' is not 10 upper-case letters and digits"
        case .badTeamID: "team id '\(subject)' is not 10 upper-case letters and digits"
        }
    }
}
