import Foundation
import PaperboyClient
import Testing

/// Finding c (issue 50): the app and its Notification Service Extension (two processes) download into one edition
/// store; one writer at a time (a claim), the tier recorded, and `noData` when the edition is already there.
@Suite("EditionStore: one writer per edition, its tier recorded")
struct EditionStoreTests {
    @Test("the extension does not write into an edition the app's background session is filling, and posts nothing for it")
    func extensionLeavesTheAppsDownload() async throws {
        let newsroom = try Newsroom(bundles: [.small: 1, .large: 2])
        let (result, _) = await newsroom.wake(tier: .large)
        #expect(result == .newData)
        #expect(newsroom.transfers.started.map(\.note.index) == [1], "large-1 in the wake, large-2 in the background")
        // The alert comes while the app's session still runs.
        let (ready, _) = await newsroom.fetchInExtension()
        #expect(!ready)
        #expect(!newsroom.server.calls.contains("GET \(Newsroom.path(.small, 0))"), "no small bundle over the app's large ones")
        #expect(newsroom.server.receipts.isEmpty, "the app's session posts the edition's receipt")
        // The app's last bundle arrives: the edition is whole, of the large tier only.
        let transfer = try #require(newsroom.transfers.started.first)
        let file = try newsroom.transferFile(transfer, arrived: newsroom.timer.now)
        let receipt = newsroom.downloader.transferArrived(transfer.note, file: file, at: newsroom.timer.now)
        #expect(receipt?.result == .newData)
        #expect(receipt?.bytes == 64, "the background's bundle; the wake's first one was counted before")
        #expect(newsroom.downloader.store.held(editionID: Newsroom.editionID) == .large)
        let contents = try newsroom.downloader.store.bundles(editionID: Newsroom.editionID).map { try String(contentsOf: $0, encoding: .utf8) }
        #expect(contents == [Newsroom.content(.large, 0), Newsroom.content(.large, 1)], "the large tier's two bundles, nothing else")
    }

    @Test("an edition already on the device: the extension posts noData, as the guide requires, and may say it is ready")
    func extensionPostsNoDataWhenHeld() async throws {
        let newsroom = try Newsroom(bundles: [.small: 1])
        let (result, _) = await newsroom.wake(tier: .small)
        #expect(result == .newData)
        let (ready, _) = await newsroom.fetchInExtension()
        #expect(ready)
        #expect(newsroom.server.receipts.map(\.result) == [.newData, .noData])
    }

    @Test("the tier held is recorded: a medium device's wake falls back to small, and the store says small")
    func tierRecorded() async throws {
        let newsroom = try Newsroom(bundles: [.small: 1, .large: 2])
        let (result, _) = await newsroom.wake(tier: .medium)
        #expect(result == .newData)
        #expect(newsroom.downloader.store.held(editionID: Newsroom.editionID) == .small)
        #expect(newsroom.downloader.store.claim(of: Newsroom.editionID) == nil, "released once complete")
    }

    static let t0 = Date(timeIntervalSince1970: 1_795_377_909)
    static let edition = "0b4ed6a3-3c2e-4b8e-9a55-0d2f3f1b7c11"

    static func store() throws -> EditionStore {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-store-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return EditionStore(directory: directory, digest: Newsroom.digest)
    }

    /// A downloaded file of `content`, in the temporary directory.
    static func file(_ content: String) throws -> URL {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-file-\(UUID().uuidString)")
        try Data(content.utf8).write(to: file)
        return file
    }

    static func bundle(_ content: String) -> EditionManifest.Bundle {
        EditionManifest.Bundle(url: URL(string: "https://cdn.example.com/b.zip")!, bytes: Int64(content.utf8.count), sha256: content)
    }

    @Test("claims: busy while another writer's stands, taken over once it lapses or by its own writer that knows it dead; held once complete")
    func claims() throws {
        let store = try Self.store()
        guard case .claimed(let app) = try store.claim(Self.edition, writer: .app, until: Self.t0.addingTimeInterval(25), at: Self.t0) else {
            Issue.record("the first claim")
            return
        }
        #expect(try store.claim(Self.edition, writer: .appExtension, until: Self.t0.addingTimeInterval(27), at: Self.t0) == .busy(app))
        #expect(try store.claim(Self.edition, writer: .app, until: Self.t0.addingTimeInterval(60), at: Self.t0.addingTimeInterval(5)) == .busy(app))
        guard
            case .claimed(let again) = try store.claim(
                Self.edition,
                writer: .app,
                until: Self.t0.addingTimeInterval(60),
                at: Self.t0.addingTimeInterval(5),
                replacing: app
            )
        else {
            Issue.record("the app takes over its own dead claim")
            return
        }
        guard
            case .claimed(let late) = try store.claim(
                Self.edition,
                writer: .appExtension,
                until: Self.t0.addingTimeInterval(99),
                at: Self.t0.addingTimeInterval(61)
            )
        else {
            Issue.record("a lapsed claim is taken over")
            return
        }
        #expect(!store.release(again, editionID: Self.edition), "the lapsed claim is no longer the edition's")
        let content = String(repeating: "ab", count: 32)
        #expect(store.place(try Self.file(content), bundle: Self.bundle(content), index: 0, claim: late, editionID: Self.edition))
        _ = try store.extend(late, editionID: Self.edition, tier: .small, until: Self.t0.addingTimeInterval(99))
        #expect(try store.complete(late, editionID: Self.edition) == .committed(.small))
        #expect(
            try store.claim(Self.edition, writer: .app, until: Self.t0.addingTimeInterval(200), at: Self.t0.addingTimeInterval(100)) == .held(.small)
        )
    }

    @Test("a file that is not the bundle (length or SHA-256) is refused and removed; a claim taken over loses its bundles")
    func placeAndReplace() throws {
        let store = try Self.store()
        let small = String(repeating: "aa", count: 32)
        let large = String(repeating: "bb", count: 32)
        func claim(_ writer: EditionStore.Writer, _ tier: ImageTier, at: TimeInterval) throws -> EditionStore.Claim? {
            let until = Self.t0.addingTimeInterval(at + 25)
            guard case .claimed(let claim) = try store.claim(Self.edition, writer: writer, until: until, at: Self.t0.addingTimeInterval(at)) else {
                return nil
            }
            return try store.extend(claim, editionID: Self.edition, tier: tier, until: until)
        }
        let app = try #require(try claim(.app, .large, at: 0))
        let wrong = try Self.file(String(repeating: "cc", count: 32))
        #expect(!store.place(wrong, bundle: Self.bundle(large), index: 0, claim: app, editionID: Self.edition))
        #expect(!FileManager.default.fileExists(atPath: wrong.path), "removed")
        #expect(!store.place(try Self.file(large + "00"), bundle: Self.bundle(large), index: 0, claim: app, editionID: Self.edition))
        #expect(store.place(try Self.file(large), bundle: Self.bundle(large), index: 0, claim: app, editionID: Self.edition))
        // The app's claim lapses (its process was suspended): the extension takes over, and the app's bundles go with
        // its claim. Back, the app cannot complete; the extension's tier stands.
        let late = try #require(try claim(.appExtension, .small, at: 30))
        #expect(store.place(try Self.file(small), bundle: Self.bundle(small), index: 0, claim: late, editionID: Self.edition))
        #expect(throws: (any Error).self) { try store.complete(app, editionID: Self.edition) }
        #expect(try store.complete(late, editionID: Self.edition) == .committed(.small))
        #expect(store.held(editionID: Self.edition) == .small)
    }

    @Test("a larger tier completed after a smaller one replaces it")
    func largerReplaces() throws {
        let store = try Self.store()
        let small = String(repeating: "aa", count: 32)
        let large = String(repeating: "bb", count: 32)
        guard case .claimed(let first) = try store.claim(Self.edition, writer: .appExtension, until: Self.t0.addingTimeInterval(27), at: Self.t0),
            let extensionClaim = try store.extend(first, editionID: Self.edition, tier: .small, until: Self.t0.addingTimeInterval(27)),
            case .claimed(let second) = try store.claim(
                Self.edition,
                writer: .app,
                until: Self.t0.addingTimeInterval(60),
                at: Self.t0.addingTimeInterval(28)
            ),
            let appClaim = try store.extend(second, editionID: Self.edition, tier: .large, until: Self.t0.addingTimeInterval(60))
        else {
            Issue.record("the two claims, the second after the first lapsed")
            return
        }
        #expect(store.place(try Self.file(small), bundle: Self.bundle(small), index: 0, claim: extensionClaim, editionID: Self.edition))
        #expect(try store.complete(extensionClaim, editionID: Self.edition) == .committed(.small))
        #expect(store.place(try Self.file(large), bundle: Self.bundle(large), index: 0, claim: appClaim, editionID: Self.edition))
        #expect(try store.complete(appClaim, editionID: Self.edition) == .committed(.large))
        #expect(try store.bundles(editionID: Self.edition).map { try String(contentsOf: $0, encoding: .utf8) } == [large])
    }

    @Test("a smaller tier completed after a larger one is dropped: the device had the edition")
    func neverSmaller() throws {
        let store = try Self.store()
        let small = String(repeating: "aa", count: 32)
        let large = String(repeating: "bb", count: 32)
        guard case .claimed(let first) = try store.claim(Self.edition, writer: .appExtension, until: Self.t0.addingTimeInterval(27), at: Self.t0),
            let extensionClaim = try store.extend(first, editionID: Self.edition, tier: .small, until: Self.t0.addingTimeInterval(27)),
            case .claimed(let second) = try store.claim(
                Self.edition,
                writer: .app,
                until: Self.t0.addingTimeInterval(60),
                at: Self.t0.addingTimeInterval(28)
            ),
            let appClaim = try store.extend(second, editionID: Self.edition, tier: .large, until: Self.t0.addingTimeInterval(60))
        else {
            Issue.record("the two claims, the second after the first lapsed")
            return
        }
        #expect(store.place(try Self.file(large), bundle: Self.bundle(large), index: 0, claim: appClaim, editionID: Self.edition))
        #expect(try store.complete(appClaim, editionID: Self.edition) == .committed(.large))
        #expect(store.place(try Self.file(small), bundle: Self.bundle(small), index: 0, claim: extensionClaim, editionID: Self.edition))
        #expect(try store.complete(extensionClaim, editionID: Self.edition) == .alreadyHeld(.large))
        #expect(try store.bundles(editionID: Self.edition).map { try String(contentsOf: $0, encoding: .utf8) } == [large])
    }

    @Test("the app's next wave takes over its own claim when its background session has no transfers left (the process was killed)")
    func deadSessionTakenOver() async throws {
        let newsroom = try Newsroom(bundles: [.small: 1, .large: 2])
        _ = await newsroom.wake(tier: .large)
        #expect(newsroom.transfers.started.count == 1)
        newsroom.transfers.setRunning(true)
        let (running, _) = await newsroom.wake(tier: .large)
        #expect(running == .noData, "transfers run: nothing started, no receipt")
        #expect(newsroom.server.receipts.isEmpty)
        newsroom.transfers.setRunning(false)
        let (retried, _) = await newsroom.wake(tier: .large)
        #expect(retried == .newData)
        #expect(newsroom.transfers.started.count == 2, "handed over again")
        // The first attempt's late callback finds its claim gone: no receipt of it.
        let stale = try #require(newsroom.transfers.started.first)
        #expect(newsroom.downloader.transferFailed(stale.note, at: newsroom.timer.now) == nil)
    }

    @Test("two pushes at once (a wave and its follow-up): one wake downloads, the other leaves it and posts nothing")
    func twoWakesAtOnce() async throws {
        let newsroom = try Newsroom(bundles: [.small: 1])
        newsroom.server.answer("GET", "/v1/editions/\(Newsroom.editionID)", .init(body: newsroom.manifestJSON, takes: 1))
        let downloader = newsroom.downloader
        let first = newsroom.wakeUp(tier: .small)
        let arrival = newsroom.timer.now
        let (results, _) = await newsroom.timer.run { () -> [WakeResult] in
            async let one = downloader.wake(first, arrival: arrival, backgroundRefresh: true)
            async let two = downloader.wake(first, arrival: arrival, backgroundRefresh: true)
            return await [one, two]
        }
        #expect(results.sorted { "\($0)" < "\($1)" } == [.newData, .noData])
        #expect(newsroom.server.calls.filter { $0.hasPrefix("GET /v1/editions") }.count == 1)
        #expect(newsroom.server.receipts.map(\.result) == [.newData])
    }

    @Test("an edition removed (the app prunes old ones) is gone for every writer")
    func removed() async throws {
        let newsroom = try Newsroom(bundles: [.small: 1])
        _ = await newsroom.wake(tier: .small)
        #expect(newsroom.downloader.has(editionID: Newsroom.editionID))
        try newsroom.downloader.store.remove(editionID: Newsroom.editionID)
        #expect(!newsroom.downloader.has(editionID: Newsroom.editionID))
        #expect(newsroom.downloader.store.bundles(editionID: Newsroom.editionID).isEmpty)
    }
}
