import Foundation
import _CryptoExtras

/// The signed JWT a service account trades for an access token at its `token_uri` (RFC 7523, Google's
/// "OAuth 2.0 for server to server applications"): RS256 over `{"alg":"RS256","typ":"JWT","kid":<key id>}` and
/// the claims `iss` (the account's e-mail), `scope` (FCM's), `aud` (the token URI), `iat` and `exp`.
struct FCMAssertion: Sendable {
    /// What FCM HTTP v1 needs, and nothing more.
    static let scope = "https://www.googleapis.com/auth/firebase.messaging"
    /// Google accepts assertions valid for at most an hour.
    static let lifetime: TimeInterval = 3600

    let clientEmail: String
    let privateKeyID: String
    let tokenURI: String
    let privateKey: _RSA.Signing.PrivateKey

    /// The assertion issued at `issuedAt` (whole seconds), valid for ``lifetime``.
    func signed(issuedAt: Date) throws -> String {
        let iat = Int(issuedAt.timeIntervalSince1970)
        let header = try Self.json(["alg": "RS256", "typ": "JWT", "kid": privateKeyID])
        let claims = try Self.json([
            "iss": clientEmail, "scope": Self.scope, "aud": tokenURI, "iat": iat, "exp": iat + Int(Self.lifetime),
        ])
        let signingInput = Self.base64URL(header) + "." + Self.base64URL(claims)
        let signature = try privateKey.signature(for: Data(signingInput.utf8), padding: .insecurePKCS1v1_5)
        return signingInput + "." + Self.base64URL(signature.rawRepresentation)
    }

    private static func json(_ object: [String: any Sendable]) throws -> Data {
        // Sorted keys: the same claims give the same bytes, which tests can compare.
        try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
