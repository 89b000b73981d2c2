/// A Firebase Cloud Messaging registration token: opaque text that the Firebase SDK gives an app instance.
///
/// Firebase documents no format, so only what any token is made of is checked: URL-safe characters
/// (letters, digits, `-`, `_`, and the `:` that follows the instance id in today's tokens, which are
/// about 150 to 170 characters). The length bound is generous on purpose: Google's own statement for the
/// token's predecessor was "no pattern, at most 4 KB", and tokens over 350 characters have been reported.
/// ``lengths`` stops at 2048 because the token is a key of the unique `devices` index, whose entries
/// PostgreSQL limits to about 2.7 KB; that is still six times the longest token seen in the wild.
public struct FCMToken: Hashable, Sendable, CustomStringConvertible {
    /// The accepted length, in characters (bytes: the characters are ASCII).
    public static let lengths: ClosedRange<Int> = 32...2048

    /// The token as the app sent it and as FCM expects it in a message's `token`.
    public let text: String

    /// Checks that `text` is made of URL-safe characters and within ``lengths``.
    ///
    /// - Throws: ``FCMToken/ParseError``.
    public init(_ text: some StringProtocol) throws(ParseError) {
        let utf8 = Array(text.utf8)
        guard Self.lengths.contains(utf8.count) else { throw .badLength(utf8.count) }
        guard utf8.allSatisfy(Self.isAllowed) else { throw .badCharacter }
        self.text = String(decoding: utf8, as: UTF8.self)
    }

    /// Wraps the stored ASCII bytes of a token, e.g. read back from storage.
    public init(bytes: [UInt8]) {
        text = String(decoding: bytes, as: UTF8.self)
    }

    /// The token's ASCII bytes, as stored in `devices.token`.
    public var bytes: [UInt8] { Array(text.utf8) }

    public var description: String { text }

    /// The device's stable 32-bit cohort key: the same hash as an APNs token's, over the ASCII bytes.
    public var cohortKey: UInt32 { DeviceToken.cohortKey(of: bytes) }

    private static func isAllowed(_ c: UInt8) -> Bool {
        switch c {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: ":"):
            true
        default: false
        }
    }
}

extension FCMToken {
    /// Why a text is not an FCM registration token.
    public enum ParseError: Error, Equatable, Sendable, CustomStringConvertible {
        case badLength(Int)
        case badCharacter

        public var description: String {
            switch self {
            case .badLength(let length):
                "an FCM registration token is \(FCMToken.lengths.lowerBound) to \(FCMToken.lengths.upperBound) characters; got \(length)"
            case .badCharacter:
                "an FCM registration token contains only letters, digits, '-', '_' and ':'"
            }
        }
    }
}
