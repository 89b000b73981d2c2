import Foundation
import PaperboyCore
import Testing

/// A valid edition for 2026-11-23 with a deadline of 09:00 Tokyo time; `now` is before it.
enum EditionSample {
    static let now = ISO8601DateFormatter().date(from: "2026-11-22T20:00:00Z")!
    static let sha = String(repeating: "ab", count: 32)

    static func manifest(publication: String = "morning", issueDate: String = "2026-11-23") -> EditionManifest {
        EditionManifest(
            publication: publication,
            issueDate: issueDate,
            deadline: "2026-11-23T09:00:00+09:00",
            tiers: [
                "large": .init(bundles: [.init(url: "https://cdn.example.com/2026-11-23/morning/large-1.zip", bytes: 52_428_800, sha256: sha)]),
                "small": .init(bundles: [.init(url: "https://cdn.example.com/2026-11-23/morning/small-1.zip", bytes: 1_048_576, sha256: sha)]),
            ],
            pages: [.init(number: 1, title: "Front page"), .init(number: 2, title: "Economy")]
        )
    }

    static func json(publication: String = "morning", issueDate: String = "2026-11-23", deadline: String = "2099-11-23T09:00:00+09:00") -> String {
        """
        {"publication": "\(publication)", "issueDate": "\(issueDate)", "deadline": "\(deadline)", \
        "tiers": {"large": {"bundles": [{"url": "https://cdn.example.com/\(issueDate)/large-1.zip", "bytes": 52428800, "sha256": "\(sha)"}]}, \
        "small": {"bundles": [{"url": "https://cdn.example.com/\(issueDate)/small-1.zip", "bytes": 1048576, "sha256": "\(sha)"}]}}, \
        "pages": [{"number": 1, "title": "Front page"}, {"number": 2, "title": "Economy"}]}
        """
    }
}

@Suite("Edition manifest validation")
struct EditionManifestTests {
    func failure(_ change: (inout EditionManifest) -> Void, now: Date = EditionSample.now) -> EditionManifestError? {
        var manifest = EditionSample.manifest()
        change(&manifest)
        do {
            try manifest.validate(now: now)
            return nil
        } catch {
            return error
        }
    }

    @Test("the published file shape decodes and validates, returning the deadline instant")
    func validFile() throws {
        let manifest = try JSONDecoder().decode(EditionManifest.self, from: Data(EditionSample.json(deadline: "2026-11-23T09:00:00+09:00").utf8))
        #expect(manifest.tiers["large"]?.bundles.first?.bytes == 52_428_800)
        let deadline = try manifest.validate(now: EditionSample.now)
        #expect(deadline == ISO8601DateFormatter().date(from: "2026-11-23T00:00:00Z"))
    }

    @Test("each bad field is refused with its JSON path")
    func fieldNames() {
        let bundle = "tiers.large.bundles[0]"
        let cases: [(String, (inout EditionManifest) -> Void)] = [
            ("publication", { $0.publication = "" }),
            ("issueDate", { $0.issueDate = "2026-02-30" }),
            ("issueDate", { $0.issueDate = "23.11.2026" }),
            ("deadline", { $0.deadline = "tomorrow" }),
            ("deadline", { $0.deadline = "2099-01-03T09:00:00+0900" }),
            ("tiers", { $0.tiers = [:] }),
            ("tiers.huge", { $0.tiers["huge"] = $0.tiers["large"] }),
            ("tiers.medium.bundles", { $0.tiers["medium"] = .init(bundles: []) }),
            ("\(bundle).url", { $0.tiers["large"]!.bundles[0].url = "http://cdn.example.com/a.zip" }),
            ("\(bundle).url", { $0.tiers["large"]!.bundles[0].url = "ftp://cdn.example.com/a.zip" }),
            ("\(bundle).url", { $0.tiers["large"]!.bundles[0].url = "not a url" }),
            ("\(bundle).bytes", { $0.tiers["large"]!.bundles[0].bytes = 0 }),
            ("\(bundle).sha256", { $0.tiers["large"]!.bundles[0].sha256 = String(repeating: "g", count: 64) }),
            ("\(bundle).sha256", { $0.tiers["large"]!.bundles[0].sha256 = "abc" }),
            ("pages[1].number", { $0.pages[1].number = 1 }),
            ("pages[0].number", { $0.pages[0].number = 0 }),
            ("pages", { $0.pages[1].number = 3 }),
        ]
        for (field, change) in cases {
            #expect(failure(change)?.field == field, "expected \(field)")
        }
    }

    @Test("a deadline that has passed is refused; http is allowed for localhost only")
    func deadlineAndLocalhost() {
        let after = ISO8601DateFormatter().date(from: "2026-11-23T00:00:00Z")!
        #expect(failure({ _ in }, now: after)?.field == "deadline")
        #expect(failure({ $0.tiers["large"]!.bundles[0].url = "http://127.0.0.1:9000/large-1.zip" }) == nil)
        #expect(failure({ $0.tiers["large"]!.bundles[0].url = "http://localhost/large-1.zip" }) == nil)
        #expect(failure({ $0.issueDate = "2028-02-29" }) == nil)
        #expect(failure({ $0.issueDate = "2026-02-29" })?.field == "issueDate")
    }

    @Test("the stored edition encodes flat with its id and the deadline as published")
    func editionEncoding() throws {
        let id = UUID()
        let edition = Edition(id: id, appID: 3, manifest: EditionSample.manifest(), deadline: EditionSample.now, publishedAt: EditionSample.now)
        let json = try #require(JSONSerialization.jsonObject(with: JSONEncoder().encode(edition)) as? [String: Any])
        #expect(json["id"] as? String == id.uuidString.lowercased())
        #expect(json["deadline"] as? String == "2026-11-23T09:00:00+09:00")
        #expect(json["issueDate"] as? String == "2026-11-23")
        #expect((json["tiers"] as? [String: Any])?.keys.sorted() == ["large", "small"])
    }

    @Test("FCM data carries the APNs payload's keys as strings, the fetch list as its JSON text, the wave as its number")
    func fcmData() throws {
        let edition = Edition(id: UUID(), appID: 3, manifest: EditionSample.manifest(), deadline: EditionSample.now, publishedAt: EditionSample.now)
        let push = EditionPush(edition: edition, tier: .large, wave: 2)
        let data = try push.fcmData()
        #expect(Set(data.keys) == ["edition", "manifest", "tier", "deadline", "fetch", "wave"])
        #expect(data["wave"] == "2")
        let apns = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(push)) as? [String: Any])
        #expect(apns["wave"] as? Int == 2)
        #expect(data["edition"] == push.edition)
        #expect(data["manifest"] == push.manifest)
        #expect(data["tier"] == "large")
        #expect(data["deadline"] == "2026-11-23T09:00:00+09:00")
        let fetch = try JSONDecoder().decode([String].self, from: Data(try #require(data["fetch"]).utf8))
        #expect(fetch == push.fetch && !fetch.isEmpty)
    }

    @Test("broadcast options: androidPriority is normal when absent, and round-trips")
    func androidPriority() throws {
        let absent = try JSONDecoder().decode(BroadcastOptions.self, from: Data("{}".utf8))
        #expect(absent.androidPriority == .normal)
        let high = try JSONDecoder().decode(BroadcastOptions.self, from: Data(#"{"androidPriority": "high"}"#.utf8))
        #expect(high.androidPriority == .high)
        #expect(try JSONDecoder().decode(BroadcastOptions.self, from: JSONEncoder().encode(high)) == high)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(BroadcastOptions.self, from: Data(#"{"androidPriority": "urgent"}"#.utf8)) }
    }

    @Test("broadcast options: dormantAfter is 3 when absent (broadcasts stored before it existed), round-trips, and 0...100 validate")
    func dormantAfter() throws {
        let absent = try JSONDecoder().decode(BroadcastOptions.self, from: Data("{}".utf8))
        #expect(absent.dormantAfter == 3)
        let never = try JSONDecoder().decode(BroadcastOptions.self, from: Data(#"{"dormantAfter": 0}"#.utf8))
        #expect(never.dormantAfter == 0)
        #expect(try JSONDecoder().decode(BroadcastOptions.self, from: JSONEncoder().encode(never)) == never)
        try never.validate()
        for bad in [-1, 101] {
            var options = BroadcastOptions()
            options.dormantAfter = bad
            #expect(throws: BroadcastOptionsError.self) { try options.validate() }
            do { try options.validate() } catch { #expect(error.field == "dormantAfter") }
        }
    }
}
