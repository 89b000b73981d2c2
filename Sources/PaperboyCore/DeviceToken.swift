/// An APNs device token, normalized to lowercase hex.
///
/// Tokens are variable length: 32 bytes (64 hex characters) today, up to 100 bytes (200 hex characters)
/// per Apple. Nothing here assumes 64.
public struct DeviceToken: Hashable, Sendable, CustomStringConvertible {
    /// The accepted length of the hex form, in characters.
    public static let hexLengths: ClosedRange<Int> = 64...200

    /// The raw token bytes, as APNs issued them.
    public let bytes: [UInt8]

    /// Parses a hex token, case-insensitively.
    ///
    /// - Throws: ``DeviceToken/ParseError`` when the text is not hex or its length is outside ``hexLengths``
    ///   or odd.
    public init(hex text: some StringProtocol) throws(ParseError) {
        let utf8 = Array(text.utf8)
        guard Self.hexLengths.contains(utf8.count), utf8.count.isMultiple(of: 2) else {
            throw .badLength(utf8.count)
        }
        var bytes = [UInt8]()
        bytes.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = Self.nibble(utf8[index]), let low = Self.nibble(utf8[index + 1]) else {
                throw .notHex
            }
            bytes.append(high << 4 | low)
            index += 2
        }
        self.bytes = bytes
    }

    /// Wraps raw token bytes, e.g. read back from storage.
    public init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The normalized lowercase hex form, as sent in `POST /3/device/<token>`.
    public var hex: String { Hex.encode(bytes) }

    public var description: String { hex }

    /// A stable 32-bit key that places the device in a cohort.
    ///
    /// The same token has the same key on every machine and every day. Cohort `i` of `n` is the key
    /// range `[i * 2^32 / n, (i + 1) * 2^32 / n)`, so a cohort is one contiguous index range in storage
    /// and adding devices never moves an existing device to another cohort. See ``cohort(count:)``.
    public var cohortKey: UInt32 { Self.cohortKey(of: bytes) }

    /// The cohort key of a token's stored bytes, whichever provider issued it: the raw bytes of an APNs
    /// token, the ASCII bytes of an FCM registration token (``FCMToken/cohortKey``).
    public static func cohortKey(of bytes: [UInt8]) -> UInt32 {
        // FNV-1a 64 over the bytes, then the MurmurHash3 finalizer so that tokens that differ only in
        // their last bytes (as a test fleet's do) still spread over the high bits.
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        hash ^= hash >> 33
        hash &*= 0xff51_afd7_ed55_8ccd
        hash ^= hash >> 33
        hash &*= 0xc4ce_b9fe_1a85_ec53
        hash ^= hash >> 33
        return UInt32(truncatingIfNeeded: hash >> 32)
    }

    /// The device's cohort when the audience is split into `count` cohorts.
    public func cohort(count: Int) -> Int {
        Self.cohort(ofKey: cohortKey, count: count)
    }

    /// The cohort of a ``cohortKey`` when the audience is split into `count` cohorts.
    public static func cohort(ofKey key: UInt32, count: Int) -> Int {
        precondition(count > 0, "cohort count must be positive")
        return Int((UInt64(key) * UInt64(count)) >> 32)
    }

    /// The half-open range of ``cohortKey`` values that make up cohort `index` of `count`.
    public static func cohortKeyRange(index: Int, count: Int) -> Range<UInt64> {
        precondition(count > 0 && (0..<count).contains(index), "cohort index out of range")
        let space = UInt64(1) << 32
        // Smallest key k with k * count >> 32 >= index, i.e. ceil(index * 2^32 / count).
        func lowerBound(_ i: Int) -> UInt64 { (UInt64(i) * space + UInt64(count) - 1) / UInt64(count) }
        return lowerBound(index)..<lowerBound(index + 1)
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension DeviceToken {
    /// Why a text is not a device token.
    public enum ParseError: Error, Equatable, Sendable, CustomStringConvertible {
        case badLength(Int)
        case notHex

        public var description: String {
            switch self {
            case .badLength(let length):
                "a device token is an even number of hex characters, \(DeviceToken.hexLengths.lowerBound) to \(DeviceToken.hexLengths.upperBound); got \(length)"
            case .notHex:
                "a device token contains only hex characters (0-9, a-f)"
            }
        }
    }
}
