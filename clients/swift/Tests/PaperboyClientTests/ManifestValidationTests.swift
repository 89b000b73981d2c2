import Foundation
import PaperboyClient
import Testing

/// A manifest is checked where it is decoded, not at the download's end: a bundle whose sha256 is not 64 hex
/// characters, whose bytes are not above 0, or whose url is not an absolute http(s) URL, and a deadline that is not
/// RFC 3339, are refused before a byte is fetched (clients/vectors/editions/refused.json, as the Android client does).
@Suite("EditionManifest: checked when decoded")
struct ManifestValidationTests {
    static let vectors = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../../vectors/editions").standardized

    static func cases(_ name: String) throws -> [[String: Any]] {
        let root = try JSONSerialization.jsonObject(with: Data(contentsOf: vectors.appendingPathComponent(name))) as? [String: Any]
        return try #require(root?["cases"] as? [[String: Any]])
    }

    @Test("every edition of refused.json is refused when decoded")
    func refused() throws {
        let cases = try Self.cases("refused.json")
        #expect(cases.count >= 18)
        var decoded: [String] = []
        for item in cases {
            let body = try JSONSerialization.data(withJSONObject: try #require(item["edition"]))
            if (try? JSONDecoder().decode(EditionManifest.self, from: body)) != nil { decoded.append(item["name"] as? String ?? "?") }
        }
        #expect(decoded == [], "decoded although refused")
    }

    @Test("every edition of tolerated.json is still read, a sha256 in uppercase kept as lowercase")
    func tolerated() throws {
        for item in try Self.cases("tolerated.json") {
            let body = try JSONSerialization.data(withJSONObject: try #require(item["edition"]))
            let manifest = try JSONDecoder().decode(EditionManifest.self, from: body)
            #expect(manifest.tiers.keys.map(\.rawValue).sorted() == (item["tiers"] as? [String]), "\(item["name"] ?? "")")
            for bundle in manifest.tiers.values.joined() { #expect(bundle.sha256 == bundle.sha256.lowercased()) }
        }
    }
}
