import Foundation
import PaperboyClient

/// One edition on a fake API and CDN, and an app's downloader against them: the world of a wake-up test. Each bundle's
/// content is 64 hex characters, which the fake digest reads as its SHA-256 (CryptoKit is not on Linux; the glue's
/// real digest is CryptoKit's).
struct Newsroom {
    static let editionID = "0b4ed6a3-3c2e-4b8e-9a55-0d2f3f1b7c11"
    static let token = PushToken.apns(Data([0x8d, 0x4e, 0x0b, 0x1c]))
    /// The push was sent at t0 and arrives 2 s later; the edition's deadline is 8 hours after.
    static let t0 = Date(timeIntervalSince1970: 1_795_377_909)

    let timer: VirtualTimer
    let server: FakeServer
    let transfers = FakeTransfers()
    let backlog = FakeBacklog()
    let directory: URL
    let outbox: ReceiptOutboxFile
    let courier: ReceiptCourier
    let downloader: EditionDownloader
    /// Bundles per tier.
    let bundles: [ImageTier: Int]

    /// - Parameter contextTakes: the virtual seconds the device's context takes to read (its network's first path).
    init(bundles: [ImageTier: Int] = [.small: 1, .large: 2], contextTakes: TimeInterval = 0) throws {
        self.bundles = bundles
        timer = VirtualTimer(now: Self.t0.addingTimeInterval(2))
        server = FakeServer(timer: timer)
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-newsroom-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        outbox = ReceiptOutboxFile(url: directory.appendingPathComponent("receipts.json"))
        try outbox.update { $0.token = Self.token }
        let api = PaperboyAPIClient(baseURL: URL(string: "https://push.example.com")!, apiKey: "pb_test", transport: server)
        let timer = self.timer
        courier = ReceiptCourier(api: api, file: outbox, now: { timer.now }, jitter: { 0 })
        downloader = EditionDownloader(
            store: EditionStore(directory: directory.appendingPathComponent("Editions"), digest: Self.digest),
            api: api,
            courier: courier,
            transfers: transfers,
            timer: timer,
            context: { backgroundRefresh in
                if contextTakes > 0 { try? await timer.sleep(seconds: contextTakes) }
                return DeviceContext(network: .wifi, charging: true, backgroundRefresh: backgroundRefresh)
            },
            backlog: backlog
        )
        server.answer("GET", "/v1/editions/\(Self.editionID)", .init(body: manifestJSON))
        for (tier, count) in bundles {
            for index in 0..<count { server.answer("GET", Self.path(tier, index), .init(body: Data(Self.content(tier, index).utf8))) }
        }
    }

    /// The fake SHA-256: the file's text.
    static let digest: BundleDigest = { file in String(decoding: try Data(contentsOf: file), as: UTF8.self) }

    static func path(_ tier: ImageTier, _ index: Int) -> String { "/2026-11-23/morning/\(tier.rawValue)-\(index + 1).zip" }

    /// A bundle's bytes: 64 hex characters of its own.
    static func content(_ tier: ImageTier, _ index: Int) -> String {
        let seed = String(format: "%02x", (ImageTier.allCases.firstIndex(of: tier)! * 16 + index) % 256)
        return String(repeating: seed, count: 32)
    }

    var deadline: Date { Self.t0.addingTimeInterval(8 * 3_600) }

    var manifestJSON: Data {
        let tiers = bundles.map { tier, count in
            let list = (0..<count).map { index in
                #"{"url": "https://cdn.example.com\#(Self.path(tier, index))", "bytes": 64, "sha256": "\#(Self.content(tier, index))"}"#
            }
            return #""\#(tier.rawValue)": {"bundles": [\#(list.joined(separator: ","))]}"#
        }
        return Data(
            """
            {"id": "\(Self.editionID)", "appId": 1, "publication": "morning", "issueDate": "2026-11-23",
             "deadline": "2026-11-23T09:00:00+09:00", "tiers": {\(tiers.joined(separator: ","))}, "pages": []}
            """.utf8
        )
    }

    /// The push for `tier` (its `fetch` as the server builds it), wave 1, sent at t0.
    func wakeUp(tier: ImageTier = .large, extensionLimits: EditionWakeUp.ExtensionLimits? = nil) -> EditionWakeUp {
        EditionWakeUp(
            editionID: Self.editionID,
            manifestPath: "/v1/editions/\(Self.editionID)",
            tier: tier,
            deadline: deadline,
            fetch: (0..<(bundles[tier] ?? 0)).map { URL(string: "https://cdn.example.com\(Self.path(tier, $0))")! },
            wave: 1,
            sentAt: Self.t0,
            extensionLimits: extensionLimits,
            isAlert: extensionLimits != nil
        )
    }

    /// The app's wake-up for `tier`, run in virtual time.
    func wake(tier: ImageTier = .large) async -> (result: WakeResult, at: Date) {
        let downloader = self.downloader
        let wakeUp = self.wakeUp(tier: tier)
        let arrival = timer.now
        let (result, at) = await timer.run { await downloader.wake(wakeUp, arrival: arrival, backgroundRefresh: true) }
        return (result, at)
    }

    /// The extension's fetch for an alert, run in virtual time.
    func fetchInExtension() async -> (ready: Bool, at: Date) {
        let downloader = self.downloader
        let wakeUp = self.wakeUp(tier: .small, extensionLimits: .init(seconds: 30, megabytes: 24))
        let arrival = timer.now
        let (ready, at) = await timer.run { await downloader.fetchInExtension(wakeUp, arrival: arrival) }
        return (ready, at)
    }

    /// A background transfer's file as the system hands it to the session's delegate, written at `arrived`.
    func transferFile(_ transfer: BackgroundTransfer, arrived: Date, content: String? = nil) throws -> URL {
        let file = directory.appendingPathComponent("transfer-\(UUID().uuidString)")
        let tier = ImageTier.allCases.first { transfer.url.path.contains("/\($0.rawValue)-") }!
        try Data((content ?? Self.content(tier, transfer.note.index)).utf8).write(to: file)
        try FileManager.default.setAttributes([.modificationDate: arrived], ofItemAtPath: file.path)
        return file
    }
}
