import Foundation
import _CryptoExtras

/// A Google service-account key file, as the Firebase console issues it (and as the simulator writes throwaway
/// ones): the fields a client needs to sign its OAuth2 assertion.
extension FCMSimulator {
    public struct ServiceAccount: Sendable, Codable, Equatable {
        public var type: String
        public var projectID: String
        public var privateKeyID: String
        /// The RSA private key, PKCS#8 PEM (`BEGIN PRIVATE KEY`) as Google issues it.
        public var privateKey: String
        public var clientEmail: String
        public var clientID: String
        public var authURI: String
        public var tokenURI: String

        enum CodingKeys: String, CodingKey {
            case type
            case projectID = "project_id"
            case privateKeyID = "private_key_id"
            case privateKey = "private_key"
            case clientEmail = "client_email"
            case clientID = "client_id"
            case authURI = "auth_uri"
            case tokenURI = "token_uri"
        }

        /// The error for a key file the simulator cannot use, naming the field.
        public struct InvalidFile: Error, CustomStringConvertible {
            public var description: String
        }

        /// A fresh account with a new RSA-2048 key: throwaway, for the simulator only.
        ///
        /// - Parameters:
        ///   - projectID: the Firebase project the account sends for.
        ///   - tokenURI: where clients fetch access tokens: the simulator's token URL.
        public static func generate(projectID: String, tokenURI: String) throws -> FCMSimulator.ServiceAccount {
            let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            var id = SystemRandomNumberGenerator()
            let keyID = (0..<20).map { _ in String(format: "%02x", UInt8.random(in: .min ... .max, using: &id)) }.joined()
            let clientID = String((0..<21).map { _ in Character(String(Int.random(in: 0...9, using: &id))) })
            return FCMSimulator.ServiceAccount(
                type: "service_account",
                projectID: projectID,
                privateKeyID: keyID,
                privateKey: key.pkcs8PEMRepresentation,
                clientEmail: "firebase-adminsdk-sim@\(projectID).iam.gserviceaccount.com",
                clientID: clientID,
                authURI: "https://accounts.google.com/o/oauth2/auth",
                tokenURI: tokenURI
            )
        }

        /// Reads and checks a key file: JSON, `type` `service_account`, every field present, an RSA key that parses.
        public static func load(file: String) throws -> FCMSimulator.ServiceAccount {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw InvalidFile(description: "\(file) does not exist or cannot be read")
            }
            return try decode(data, source: file)
        }

        static func decode(_ data: Data, source: String) throws -> FCMSimulator.ServiceAccount {
            guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
                throw InvalidFile(description: "\(source) is not a JSON object")
            }
            for field in ["type", "project_id", "private_key_id", "private_key", "client_email", "token_uri"] {
                guard let value = object[field] as? String, !value.isEmpty else {
                    throw InvalidFile(description: "\(source): field '\(field)' is missing or not a string")
                }
            }
            guard object["type"] as? String == "service_account" else {
                throw InvalidFile(description: "\(source): field 'type' is not 'service_account'")
            }
            let account = FCMSimulator.ServiceAccount(
                type: "service_account",
                projectID: object["project_id"] as! String,
                privateKeyID: object["private_key_id"] as! String,
                privateKey: object["private_key"] as! String,
                clientEmail: object["client_email"] as! String,
                clientID: object["client_id"] as? String ?? "",
                authURI: object["auth_uri"] as? String ?? "https://accounts.google.com/o/oauth2/auth",
                tokenURI: object["token_uri"] as! String
            )
            do {
                _ = try account.signingKey()
            } catch {
                throw InvalidFile(description: "\(source): field 'private_key' is not an RSA private key in PEM of 2048 bits or more")
            }
            return account
        }

        func signingKey() throws -> _RSA.Signing.PrivateKey {
            try _RSA.Signing.PrivateKey(pemRepresentation: privateKey)
        }

        /// The file's JSON, with Google's field names, keys sorted.
        public func jsonData() throws -> Data {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            return try encoder.encode(self)
        }

        /// Writes the file readable by its owner only (it holds a private key).
        public func write(to file: String) throws {
            let url = URL(fileURLWithPath: file)
            try jsonData().write(to: url, options: .atomic)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file)
        }
    }
}

extension FCMSimulator.ServiceAccount: CustomStringConvertible {
    /// Names the account without its private key.
    public var description: String { "service account \(clientEmail) (project \(projectID), key \(privateKeyID))" }
}
