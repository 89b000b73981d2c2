import Foundation
import PaperboyBroadcast
import PaperboyClient
import PaperboyCore
import Testing

@Suite("The tier and its fallback")
struct DownloadPlanTests {
    @Test("each tier falls back to the smaller ones first, nearest first, then the larger")
    func fallbackOrder() {
        #expect(PaperboyClient.ImageTier.large.fallbackOrder == [.large, .medium, .small])
        #expect(PaperboyClient.ImageTier.medium.fallbackOrder == [.medium, .small, .large])
        #expect(PaperboyClient.ImageTier.small.fallbackOrder == [.small, .medium, .large])
    }

    /// The server's edition, as `GET /v1/editions/{id}` encodes it, decoded by the client.
    static func manifest(tiers: [String]) throws -> PaperboyClient.EditionManifest {
        let encoder = JSONEncoder()
        let data = try encoder.encode(EditionWakeUpTests.edition(tiers: tiers))
        return try JSONDecoder().decode(PaperboyClient.EditionManifest.self, from: data)
    }

    @Test("the server's edition decodes: its tiers' bundles with lengths and SHA-256, the pages, the deadline")
    func decodesTheServersEdition() throws {
        let manifest = try Self.manifest(tiers: ["small", "large"])
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
        let largeOnly = try Self.manifest(tiers: ["large"])
        #expect(largeOnly.plan(for: .small)?.tier == .large)
        #expect(try Self.manifest(tiers: []).plan(for: .small) == nil)
    }

    @Test("a push to a tier the edition lacks has an empty fetch: the manifest's plan is the way to the bundles")
    func emptyFetch() throws {
        let edition = EditionWakeUpTests.edition(tiers: ["small", "large"])
        let pushes = try APNsService.notifications(for: edition, kind: .background, wave: 1)
        let wakeUp = try EditionWakeUpTests.wakeUp(pushes[.medium])
        #expect(wakeUp.fetch.isEmpty)
        #expect(wakeUp.tier == .medium)
        #expect(
            try Self.manifest(tiers: ["small", "large"]).plan(for: wakeUp.tier)?.bundles.map(\.url.lastPathComponent) == [
                "small-1.zip", "small-2.zip",
            ]
        )
    }
}
