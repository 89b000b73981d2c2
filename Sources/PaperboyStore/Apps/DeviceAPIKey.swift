import Crypto
import PaperboyCore

/// The secret a device app sends in `X-API-Key`. Only its SHA-256 is stored; the key is shown once.
public struct DeviceAPIKey: Sendable {
    /// The key as the app sends it.
    public let secret: String

    /// A new random key: `pb_` and 64 hex characters (256 bits).
    public static func generate() -> DeviceAPIKey {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return DeviceAPIKey(secret: "pb_" + Hex.encode(bytes))
    }

    public init(secret: String) {
        self.secret = secret
    }

    /// What is stored and looked up: the key's SHA-256. Looking keys up by their hash means the lookup
    /// never compares the secret itself, so its timing says nothing about the key.
    public var hash: [UInt8] { Array(SHA256.hash(data: Array(secret.utf8))) }
}
