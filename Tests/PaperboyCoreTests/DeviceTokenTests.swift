import PaperboyCore
import Testing

@Suite("Device tokens")
struct DeviceTokenTests {
    @Test("hex is parsed case-insensitively and printed normalized")
    func normalization() throws {
        let token = try DeviceToken(hex: "ABcd" + String(repeating: "0f", count: 30))
        #expect(token.hex == "abcd" + String(repeating: "0f", count: 30))
        #expect(token.bytes.count == 32)
        #expect(token.bytes.prefix(2) == [0xab, 0xcd])
        #expect(try DeviceToken(hex: token.hex.uppercased()) == token)
    }

    @Test("lengths from 64 to 200 hex characters are accepted; others and non-hex are refused")
    func lengths() throws {
        #expect(try DeviceToken(hex: String(repeating: "a", count: 200)).bytes.count == 100)
        #expect(throws: DeviceToken.ParseError.badLength(62)) { try DeviceToken(hex: String(repeating: "a", count: 62)) }
        #expect(throws: DeviceToken.ParseError.badLength(202)) { try DeviceToken(hex: String(repeating: "a", count: 202)) }
        #expect(throws: DeviceToken.ParseError.badLength(65)) { try DeviceToken(hex: String(repeating: "a", count: 65)) }
        #expect(throws: DeviceToken.ParseError.notHex) { try DeviceToken(hex: String(repeating: "g", count: 64)) }
    }

    @Test("cohort keys are stable: known values never change between builds")
    func stableCohortKeys() throws {
        // Stored in every device row: changing the hash would move every device to another cohort.
        // The values were computed independently (FNV-1a 64 then the MurmurHash3 finalizer, high 32 bits).
        #expect(try DeviceToken(hex: String(repeating: "ab", count: 32)).cohortKey == 631_466_742)
        #expect(DeviceToken(bytes: Array(repeating: 0, count: 32)).cohortKey == 2_151_949_722)
        #expect(try DeviceToken(hex: String(repeating: "ab", count: 31) + "ac").cohortKey != 631_466_742)
    }

    @Test("sequential tokens spread evenly over cohorts, and a cohort is exactly its key range")
    func cohortSpread() throws {
        let cohorts = 10
        var counts = Array(repeating: 0, count: cohorts)
        for index in 0..<20_000 {
            var bytes = Array(repeating: UInt8(0), count: 32)
            bytes[28] = UInt8(index >> 24 & 0xff)
            bytes[29] = UInt8(index >> 16 & 0xff)
            bytes[30] = UInt8(index >> 8 & 0xff)
            bytes[31] = UInt8(index & 0xff)
            let token = DeviceToken(bytes: bytes)
            let cohort = token.cohort(count: cohorts)
            counts[cohort] += 1
            #expect(DeviceToken.cohortKeyRange(index: cohort, count: cohorts).contains(UInt64(token.cohortKey)))
        }
        // 2,000 expected per cohort; a fair hash stays within a few percent.
        #expect(counts.allSatisfy { (1_850...2_150).contains($0) }, "counts: \(counts)")
    }

    @Test("cohort key ranges tile the whole key space without gaps or overlaps")
    func rangesTile() {
        for count in [1, 3, 7, 10, 64, 1000] {
            var next: UInt64 = 0
            for index in 0..<count {
                let range = DeviceToken.cohortKeyRange(index: index, count: count)
                #expect(range.lowerBound == next)
                #expect(DeviceToken.cohort(ofKey: UInt32(range.lowerBound), count: count) == index)
                #expect(DeviceToken.cohort(ofKey: UInt32(range.upperBound - 1), count: count) == index)
                next = range.upperBound
            }
            #expect(next == 1 << 32)
        }
    }
}
