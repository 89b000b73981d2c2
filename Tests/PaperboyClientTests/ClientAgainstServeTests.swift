import Foundation
import PaperboyClient
import PaperboyCore
import PaperboyTesting
import Testing

/// The client library against a real `paperboy serve` and PostgreSQL: what an app does from its first launch
/// to an erased device.
@Suite("PaperboyClient against paperboy serve")
struct ClientAgainstServeTests {
    static let token = PushToken.apns(Data((0..<32).map { (index: Int) -> UInt8 in UInt8(truncatingIfNeeded: index &* 7) }))

    static func registration(tier: PaperboyClient.ImageTier = .medium) -> PaperboyClient.DeviceRegistration {
        PaperboyClient.DeviceRegistration(
            route: .apns(.production),
            subscriptions: ["morning", "evening"],
            timeZone: TimeZone(identifier: "Asia/Tokyo")!,
            tier: tier,
            alertsAuthorized: true,
            appVersion: "5.1",
            osVersion: "17.4",
            model: "iPhone15,2",
            locale: "ja_JP"
        )
    }

    static func outbox() throws -> ReceiptOutboxFile {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-client-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return ReceiptOutboxFile(url: directory.appendingPathComponent("receipts.json"))
    }

    @Test(
        "register (201 then 200), read the edition and fall back to its nearest tier, deliver receipts through the outbox, erase, and replay after registering again",
        .enabled(if: PaperboyBinary.isBuilt, "the paperboy binary is built beside the tests")
    )
    func aDevicesLife() async throws {
        try await LiveServe.with { serve in
            let api = PaperboyAPIClient(baseURL: serve.base, apiKey: serve.key)
            try await Self.registers(api)
            let editionID = serve.edition.id.uuidString.lowercased()
            try await Self.readsTheEdition(api, editionID: editionID)
            let courier = ReceiptCourier(api: api, file: try Self.outbox())
            try await Self.delivers(courier, editionID: editionID)
            try await Self.erasesAndReplays(api, courier: courier, editionID: editionID)
            try await Self.removesAndRefuses(api)
            try await Self.stopsOnAWrongKey(serve, editionID: editionID)
        }
    }

    /// 201, then 200; an FCM device says whose token it is.
    static func registers(_ api: PaperboyAPIClient) async throws {
        let first = try await api.register(token, registration())
        #expect(first.created)
        #expect(first.device.active)
        #expect(first.device.token == token.text)
        let second = try await api.register(token, registration())
        #expect(!second.created)
        try await api.reportOpen(token)  // 204: the app came to the foreground
        let android = PushToken.fcm("cAbC-12_dEf:APA91bHk" + String(repeating: "x", count: 130))
        let body = PaperboyClient.DeviceRegistration(route: .fcm(.android), subscriptions: ["morning"], tier: .large, alertsAuthorized: false)
        let fcm = try await api.register(android, body)
        #expect(fcm.created)
        #expect(fcm.device.provider == "fcm")
        #expect(fcm.device.platform == "android")
    }

    /// A medium device and an edition with small and large bundles: the nearest smaller tier.
    static func readsTheEdition(_ api: PaperboyAPIClient, editionID: String) async throws {
        let manifest = try await api.manifest(path: "/v1/editions/\(editionID)")
        let plan = try #require(manifest.plan(for: .medium))
        #expect(plan.tier == .small)
        #expect(plan.fellBack)
        #expect(plan.bytes == 8_388_608)
        let latest = try await api.latestEdition(publication: "morning")
        #expect(latest.id == editionID)
    }

    /// No token until the first registration the courier hears of, then delivered (201); a repeat is answered
    /// 200 and leaves the outbox as well; a receipt for an edition the server does not have is dropped.
    static func delivers(_ courier: ReceiptCourier, editionID: String) async throws {
        let receipt = ReceiptReport(
            editionID: editionID,
            result: .newData,
            bytes: 8_388_608,
            seconds: 4.5,
            network: .wifi,
            wave: 1,
            secondsFromPush: 12
        )
        let beforeRegistering = try await courier.post(receipt)
        #expect(beforeRegistering.isEmpty)
        let registered = try await courier.registered(token)
        #expect(registered.map(\.verdict) == [ReceiptOutbox.Verdict.delivered])
        let repeated = try await courier.post(receipt)
        #expect(repeated.map(\.verdict) == [ReceiptOutbox.Verdict.delivered])
        let pending = try await courier.pending
        #expect(pending.isEmpty)
        let unknown = ReceiptReport(editionID: UUID().uuidString.lowercased(), result: .noData)
        let dropped = try await courier.post(unknown)
        #expect(dropped.map(\.verdict) == [ReceiptOutbox.Verdict.dropped])
        #expect(dropped.first?.error?.field == "editionId")
    }

    /// Erased: the device is gone (404 naming token); a receipt waits for the next registration, then goes.
    static func erasesAndReplays(_ api: PaperboyAPIClient, courier: ReceiptCourier, editionID: String) async throws {
        try await api.remove(token, erase: true)
        let gone = await refusal { _ = try await api.device(token) }
        let error = try #require(gone, "an erased device is still there")
        #expect(error.status == 404)
        #expect(error.field == "token")
        #expect(error.reaction == .registerThenRetry)
        let open = await refusal { try await api.reportOpen(token) }
        #expect(open?.status == 404 && open?.field == "token", "an erased device's open report is refused naming token")
        let waiting = try await courier.post(ReceiptReport(editionID: editionID, result: .noData, wave: 2))
        #expect(waiting.map(\.verdict) == [ReceiptOutbox.Verdict.kept])
        #expect(waiting.first?.error?.field == "token")
        let held = try await courier.flush()
        #expect(held.isEmpty, "held until a registration")
        let again = try await api.register(token, registration())
        #expect(again.created, "an erased device registers as a new one")
        let replayed = try await courier.registered(token)
        #expect(replayed.map(\.verdict) == [ReceiptOutbox.Verdict.delivered])
        let pending = try await courier.pending
        #expect(pending.isEmpty)
    }

    /// Removed (not erased): kept, inactive, active again at the next registration; a refused registration
    /// names its field and is not to be sent again as it is.
    static func removesAndRefuses(_ api: PaperboyAPIClient) async throws {
        try await api.remove(token)
        let removed = try await api.device(token)
        #expect(!removed.active)
        let back = try await api.register(token, registration())
        #expect(back.device.active)
        var wrong = registration()
        wrong.subscriptions = ["sports"]
        let refused = await refusal { _ = try await api.register(token, wrong) }
        let error = try #require(refused, "a publication the app does not have was accepted")
        #expect(error.status == 404)
        #expect(error.field == "subscriptions")
        #expect(error.reaction == .drop)
    }

    /// The first 429 of `attempts` registrations in a row, if any.
    static func firstRefusal(_ api: PaperboyAPIClient, attempts: Int) async throws -> PaperboyAPIError? {
        for _ in 0..<attempts {
            let refused = await refusal { _ = try await api.register(token, registration()) }
            if let refused, refused.status == 429 { return refused }
        }
        return nil
    }

    /// The API's error a call threw, or nil when it succeeded. (A typed `do`/`catch` around these calls, with
    /// `#expect` in the `catch`, crashes Swift 6.3.1's ownership verifier: "Found outside of lifetime use".)
    static func refusal(_ call: () async throws -> Void) async -> PaperboyAPIError? {
        do {
            try await call()
            return nil
        } catch {
            return error as? PaperboyAPIError
        }
    }

    /// A wrong key: 401, and the courier stops sending in this process.
    static func stopsOnAWrongKey(_ serve: LiveServe, editionID: String) async throws {
        let wrongKey = PaperboyAPIClient(baseURL: serve.base, apiKey: "pb_" + String(repeating: "0", count: 43))
        let stopped = ReceiptCourier(api: wrongKey, file: try outbox())
        _ = try await stopped.registered(token)
        let refused = try await stopped.post(ReceiptReport(editionID: editionID, result: .noData))
        #expect(refused.first?.error?.status == 401)
        #expect(refused.first?.error?.reaction == .stopUntilNewKey)
        let again = try await stopped.flush()
        #expect(again.isEmpty)
        let pending = try await stopped.pending
        #expect(pending.count == 1)
    }

    @Test(
        "over the rate limit: 429 with Retry-After, and the courier sends nothing before it",
        .enabled(if: PaperboyBinary.isBuilt, "the paperboy binary is built beside the tests")
    )
    func rateLimited() async throws {
        try await LiveServe.with(arguments: ["--rate-limit", "1/m", "--rate-burst", "2"]) { serve in
            let api = PaperboyAPIClient(baseURL: serve.base, apiKey: serve.key)
            let limited = try await Self.firstRefusal(api, attempts: 6)
            let error = try #require(limited, "six requests at once against a burst of 2")
            let retryAfter = try #require(error.retryAfter)
            #expect(retryAfter >= 1)
            #expect(error.reaction == .retryAfter(seconds: retryAfter))

            let now = Date()
            let file = try Self.outbox()
            try file.update { $0.token = Self.token }
            let courier = ReceiptCourier(api: api, file: file, now: { now }, jitter: { 0 })
            let answer = try await courier.post(ReceiptReport(editionID: serve.edition.id.uuidString.lowercased(), result: .newData))
            #expect(answer.first?.error?.status == 429)
            // The courier's own 429 says how long is left now (less than the first one said, seconds later under load).
            let left = try #require(answer.first?.error?.retryAfter)
            #expect(left <= retryAfter)
            let paused = try #require(try file.read().outbox.pausedUntil)
            #expect(paused.timeIntervalSince(now) >= Double(left) + 1)
            let held = try await courier.flush()
            #expect(held.isEmpty)
        }
    }
}
