import Foundation
import PaperboyClient
import Testing

@Suite("The tier and its fallback")
struct DownloadPlanTests {
    @Test("each tier falls back to the smaller ones first, nearest first, then the larger")
    func fallbackOrder() {
        #expect(ImageTier.large.fallbackOrder == [.large, .medium, .small])
        #expect(ImageTier.medium.fallbackOrder == [.medium, .small, .large])
        #expect(ImageTier.small.fallbackOrder == [.small, .medium, .large])
    }

    /// An edition as `GET /v1/editions/{id}` answers it (docs/app-integration.md, "Download before the deadline"),
    /// with two bundles in each of `tiers`; the server package's ServerContractTests decodes the server's own.
    static func manifest(tiers: [String]) throws -> EditionManifest {
        let bundles = tiers.map { tier in
            """
            "\(tier)": {"bundles": [
              {"url": "https://cdn.example.com/2026-11-23/morning/\(tier)-1.zip", "bytes": 1000, "sha256": "\(String(repeating: "ab", count: 32))"},
              {"url": "https://cdn.example.com/2026-11-23/morning/\(tier)-2.zip", "bytes": 2000, "sha256": "\(String(repeating: "cd", count: 32))"}]}
            """
        }
        let json = """
            {"id": "0b4ed6a3-3c2e-4b8e-9a55-0d2f3f1b7c11", "appId": 1, "publication": "morning", "issueDate": "2026-11-23",
             "deadline": "2026-11-23T09:00:00+09:00", "tiers": {\(bundles.joined(separator: ","))},
             "pages": [{"number": 1, "title": "Front page"}], "publishedAt": "2026-11-22T19:58:41Z"}
            """
        return try JSONDecoder().decode(EditionManifest.self, from: Data(json.utf8))
    }

    @Test("an edition decodes: its tiers' bundles with lengths and SHA-256, the pages, the deadline; an unknown tier is skipped")
    func decodes() throws {
        let manifest = try Self.manifest(tiers: ["small", "large", "huge"])
        #expect(manifest.id == "0b4ed6a3-3c2e-4b8e-9a55-0d2f3f1b7c11")
        #expect(Set(manifest.tiers.keys) == [.small, .large])
        #expect(manifest.tiers[.large]?.map(\.bytes) == [1_000, 2_000])
        #expect(manifest.tiers[.large]?.first?.sha256 == String(repeating: "ab", count: 32))
        #expect(manifest.deadlineDate == Date(timeIntervalSince1970: 1_795_392_000))
        #expect(manifest.pages.count == 1)
    }

    @Test("a device gets its own tier; without it, the nearest smaller one, else the nearest larger; nil without bundles")
    func plans() throws {
        let both = try Self.manifest(tiers: ["small", "large"])
        #expect(both.plan(for: .large)?.tier == .large)
        #expect(both.plan(for: .large)?.fellBack == false)
        #expect(both.plan(for: .large)?.bytes == 3_000)
        #expect(both.plan(for: .medium)?.tier == .small)
        #expect(both.plan(for: .medium)?.fellBack == true)
        #expect(both.plan(for: .medium)?.bundles.map(\.url.lastPathComponent) == ["small-1.zip", "small-2.zip"])
        let largeOnly = try Self.manifest(tiers: ["large"])
        #expect(largeOnly.plan(for: .small)?.tier == .large)
        #expect(try Self.manifest(tiers: []).plan(for: .small) == nil)
    }
}
