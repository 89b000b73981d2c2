import Crypto
import Foundation
import _CryptoExtras

/// Checks an OAuth2 JWT-bearer token request as Google's token endpoint does: the form's `grant_type`, the
/// assertion's RS256 signature by a trusted service account's key, and its claims (`iss`, `aud`, `scope`, `iat`,
/// `exp`). Pure: the clock is a parameter.
struct FCMAssertionVerifier: Sendable {
    static let grantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    static let messagingScope = "https://www.googleapis.com/auth/firebase.messaging"
    /// Also grants FCM sends, as at Google.
    static let cloudPlatformScope = "https://www.googleapis.com/auth/cloud-platform"
    /// The longest an assertion may live (`exp - iat`).
    static let maximumLifetime: TimeInterval = 3600
    /// How far in the future `iat` may be (clients' clocks drift).
    static let clockSkew: TimeInterval = 60

    struct Account: Sendable {
        var account: FCMSimulator.ServiceAccount
        var publicKey: _RSA.Signing.PublicKey
    }

    /// Trusted accounts by `client_email`.
    var accounts: [String: Account] = [:]

    mutating func trust(_ account: FCMSimulator.ServiceAccount) throws {
        accounts[account.clientEmail] = Account(account: account, publicKey: try account.signingKey().publicKey)
    }

    /// Verifies a token request's form body.
    ///
    /// - Parameters:
    ///   - audiences: the token URLs the assertion's `aud` may name (the simulator's own).
    /// - Returns: the account the assertion was signed by, or the OAuth2 error to answer.
    func verify(form body: String, audiences: Set<String>, now: Date) -> Result<FCMSimulator.ServiceAccount, OAuthError> {
        let form = Self.parseForm(body)
        guard let grantType = form["grant_type"] else { return .failure(.init("invalid_request", "Missing required parameter: grant_type")) }
        guard grantType == Self.grantType else { return .failure(.init("unsupported_grant_type", "Invalid grant_type: \(grantType)")) }
        guard let assertion = form["assertion"], !assertion.isEmpty else {
            return .failure(.init("invalid_request", "Missing required parameter: assertion"))
        }
        return verify(assertion: assertion, audiences: audiences, now: now)
    }

    func verify(assertion: String, audiences: Set<String>, now: Date) -> Result<FCMSimulator.ServiceAccount, OAuthError> {
        let parts = assertion.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = Self.base64URLDecode(parts[0]), let claimsData = Self.base64URLDecode(parts[1]),
            let signature = Self.base64URLDecode(parts[2]),
            let header = try? JSONSerialization.jsonObject(with: headerData) as? [String: Any],
            let claims = try? JSONSerialization.jsonObject(with: claimsData) as? [String: Any]
        else { return .failure(.init("invalid_grant", "Invalid JWT: the assertion is not three base64url parts of JSON")) }
        guard header["alg"] as? String == "RS256" else {
            return .failure(.init("invalid_grant", "Invalid JWT: alg must be RS256, got \(header["alg"] ?? "none")"))
        }
        guard let issuer = claims["iss"] as? String, let trusted = accounts[issuer] else {
            return .failure(.init("invalid_grant", "Invalid JWT: iss is not a known service account"))
        }
        if let keyID = header["kid"] as? String, keyID != trusted.account.privateKeyID {
            return .failure(.init("invalid_grant", "Invalid JWT Signature."))
        }
        let signed = assertion.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count)
        guard
            trusted.publicKey.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: signature),
                for: SHA256.hash(data: Array(signed)),
                padding: .insecurePKCS1v1_5
            )
        else { return .failure(.init("invalid_grant", "Invalid JWT Signature.")) }
        guard let audience = claims["aud"] as? String, audiences.contains(audience) else {
            return .failure(.init("invalid_grant", "Invalid JWT: aud must be this token endpoint's URL"))
        }
        let scopes = (claims["scope"] as? String ?? "").split(separator: " ")
        guard scopes.contains(where: { $0 == Self.messagingScope || $0 == Self.cloudPlatformScope }) else {
            return .failure(.init("invalid_scope", "Invalid OAuth scope or ID token audience provided."))
        }
        guard let issuedAt = (claims["iat"] as? NSNumber)?.doubleValue, let expires = (claims["exp"] as? NSNumber)?.doubleValue,
            expires > issuedAt, expires - issuedAt <= Self.maximumLifetime,
            issuedAt <= now.timeIntervalSince1970 + Self.clockSkew, expires > now.timeIntervalSince1970
        else {
            return .failure(
                .init(
                    "invalid_grant",
                    "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim."
                )
            )
        }
        return .success(trusted.account)
    }

    struct OAuthError: Error, Equatable {
        var error: String
        var description: String

        init(_ error: String, _ description: String) {
            self.error = error
            self.description = description
        }
    }

    /// `a=1&b=x%2By` as a dictionary (the last of repeated names wins); `+` is a space.
    static func parseForm(_ body: String) -> [String: String] {
        var form: [String: String] = [:]
        for pair in body.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ text: Substring) -> String {
                let spaced = text.replacingOccurrences(of: "+", with: " ")
                return spaced.removingPercentEncoding ?? spaced
            }
            form[decode(parts[0])] = parts.count > 1 ? decode(parts[1]) : ""
        }
        return form
    }

    static func base64URLDecode(_ text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }
}
