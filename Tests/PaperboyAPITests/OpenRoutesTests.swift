import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import PaperboyAPI
import PaperboyCore
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Synchronization
import Testing

@Suite("Open reports API")
struct OpenRoutesTests {
    static let admin: HTTPFields = [.authorization: "Bearer \(APIFixture.adminToken)"]

    /// The API's clock, set by the test.
    final class TestNow: Sendable {
        let value: Mutex<Date>
        init(_ date: Date) { value = Mutex(date) }
        func set(_ date: Date) { value.withLock { $0 = date } }
        var now: Date { value.withLock { $0 } }
    }

    static func row(_ fixture: APIFixture, _ sql: PostgresQuery) async throws -> (Int32, Int32?, Int32?, Int32?) {
        let rows = try await fixture.db.client.query(sql, logger: fixture.db.logger)
        for try await row in rows.decode((Int32, Int32?, Int32?, Int32?).self) { return row }
        throw TestFailure("no row")
    }

    struct TestFailure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// The device's stored key, its habit's key, weekday mornings and last day.
    static func habit(_ fixture: APIFixture, token hex: String) async throws -> (key: Int32, habitKey: Int32?, mornings: Int32?, lastDay: Int32?) {
        let bytes = try DeviceToken(hex: hex).bytes
        let row = try await Self.row(
            fixture,
            """
            SELECT d.cohort_key, h.cohort_key, h.weekday_mornings, h.last_day
            FROM devices d LEFT JOIN device_habits h ON h.device_id = d.id WHERE d.token = \(ByteBuffer(bytes: bytes))
            """
        )
        return (row.0, row.1, row.2, row.3)
    }

    @Test("204 with no body; 404 naming token for a device the app does not have; 401 without a key")
    func answers() async throws {
        try await APIFixture.with { fixture, client in
            #expect(try await client.send(.put, "/v1/devices/\(token())", key: fixture.apiKey, body: validRegistration).status == .created)
            let recorded = try await client.send(.post, "/v1/devices/\(token())/opens", key: fixture.apiKey)
            #expect(recorded.status == .noContent)
            #expect(recorded.body.readableBytes == 0)
            let unknown = try await client.send(.post, "/v1/devices/\(token("cd"))/opens", key: fixture.apiKey)
            #expect(unknown.status == .notFound)
            #expect((try unknown.json()["error"] as? [String: Any])?["field"] as? String == "token")
            #expect(try await client.send(.post, "/v1/devices/\(token())/opens").status == .unauthorized)
            #expect(try await client.send(.post, "/v1/devices/xyz/opens", key: fixture.apiKey).status == .badRequest)
        }
    }

    @Test("three weekday mornings make a habit that moves the device's key to its minute; later opens that day change nothing")
    func learnsAndMoves() async throws {
        let clock = TestNow(ISO8601DateFormatter().date(from: "2026-11-23T06:30:00+09:00")!)  // a Monday
        let configure: @Sendable (inout APIConfiguration) -> Void = { $0.now = { clock.now } }
        try await APIFixture.with(configure: configure) { fixture, client in
            #expect(try await client.send(.put, "/v1/devices/\(token())", key: fixture.apiKey, body: validRegistration).status == .created)
            let hashKey = try DeviceToken(hex: token()).storedCohortKey
            for (day, minute) in [(0, 30), (1, 34), (2, 26)] {
                clock.set(ISO8601DateFormatter().date(from: "2026-11-2\(3 + day)T06:\(minute):00+09:00")!)
                #expect(try await client.send(.post, "/v1/devices/\(token())/opens", key: fixture.apiKey).status == .noContent)
                // A second look the same morning teaches nothing.
                clock.set(clock.now.addingTimeInterval(3 * 3600))
                #expect(try await client.send(.post, "/v1/devices/\(token())/opens", key: fixture.apiKey).status == .noContent)
                let stored = try await Self.habit(fixture, token: token())
                #expect(stored.mornings == Int32(day + 1))
                if day < 2 {
                    #expect(stored.key == hashKey, "no habit is known before the third morning")
                    #expect(stored.habitKey == nil)
                }
            }
            let stored = try await Self.habit(fixture, token: token())
            let minute = ReadingHabit.minute(ofKey: UInt32(bitPattern: stored.key) ^ 0x8000_0000)
            #expect(abs(minute - 210) <= 5, "06:30 on average: minute 210 of the reader's day, within the tolerance; got \(minute)")
            #expect(stored.habitKey == stored.key)
            // The re-registration at the next launch keeps the key.
            #expect(try await client.send(.put, "/v1/devices/\(token())", key: fixture.apiKey, body: validRegistration).status == .ok)
            #expect(try await Self.habit(fixture, token: token()).key == stored.key)
            // Erased at the reader's request: the habit goes with the device.
            #expect(try await client.send(.delete, "/v1/devices/\(token())?erase=true", key: fixture.apiKey).status == .noContent)
            let left = try await fixture.db.client.query("SELECT count(*) FROM device_habits", logger: fixture.db.logger)
            for try await count in left.decode(Int.self) { #expect(count == 0, "an erased device's habit is deleted") }
        }
    }

    @Test("a broadcast's first opens count as held or waiting, and its status shows ready at open; keys stay while wave 1 runs")
    func readyAtOpen() async throws {
        let clock = TestNow(Date())
        let configure: @Sendable (inout APIConfiguration) -> Void = { $0.now = { clock.now } }
        try await APIFixture.with(configure: configure) { fixture, client in
            let devices = [token("01"), token("02"), token("03")]
            for device in devices {
                #expect(try await client.send(.put, "/v1/devices/\(device)", key: fixture.apiKey, body: validRegistration).status == .created)
            }
            // Device 03 has a habit known from earlier mornings (today's first open already learned, so that the opens
            // below teach nothing), whose key is not its token's yet.
            let today = ReaderDay(clock.now.addingTimeInterval(5), timeZone: TimeZone(identifier: "Asia/Tokyo")!).number
            try await fixture.db.client.query(
                """
                INSERT INTO device_habits (device_id, weekday_minute, weekday_spread, weekday_mornings, last_day)
                SELECT id, 200, 10, 5, \(today) FROM devices WHERE token = \(ByteBuffer(bytes: try DeviceToken(hex: devices[2]).bytes))
                """,
                logger: fixture.db.logger
            )
            let published = try await client.send(.post, "/v1/editions", headers: Self.admin, body: EditionRoutesTests.file())
            let edition = try #require(try published.json()["id"] as? String)
            let started = try await client.send(.post, "/v1/broadcasts", headers: Self.admin, body: #"{"edition": "\#(edition)", "window": 600}"#)
            let id = try #require((try started.json()["broadcast"] as? [String: Any])?["id"] as? String)
            clock.set(Date().addingTimeInterval(5))

            // Device 01 already holds the edition when it opens; 02 does not, and gets it afterwards.
            let receipt = #"{"editionId": "\#(edition)", "result": "newData"}"#
            #expect(try await client.send(.post, "/v1/devices/\(devices[0])/receipts", key: fixture.apiKey, body: receipt).status == .created)
            for device in devices {
                #expect(try await client.send(.post, "/v1/devices/\(device)/opens", key: fixture.apiKey).status == .noContent)
            }
            #expect(try await client.send(.post, "/v1/devices/\(devices[1])/receipts", key: fixture.apiKey, body: receipt).status == .created)
            // A later open of 02 is not its first since the publication: it stays counted as waiting.
            #expect(try await client.send(.post, "/v1/devices/\(devices[1])/opens", key: fixture.apiKey).status == .noContent)

            // Ready at open is counted by the receipt tallies' steps (every 2 s on a worker): none ran yet.
            let before = try await client.send(.get, "/v1/broadcasts/\(id)", headers: Self.admin)
            #expect((try before.json()["readyAtOpen"] as? [String: Any])?["opens"] as? Int == 0)
            try await ReceiptTallies(client: fixture.db.client, configuration: .init(lag: .zero, interval: .zero)).step(logger: fixture.db.logger)

            let shown = try await client.send(.get, "/v1/broadcasts/\(id)", headers: Self.admin)
            let ready = try #require(try shown.json()["readyAtOpen"] as? [String: Any])
            #expect(ready["opens"] as? Int == 3)
            #expect(ready["ready"] as? Int == 1)
            #expect(ready["waited"] as? Int == 1)
            #expect(ready["stillWaiting"] as? Int == 1)
            #expect(ready["share"] == nil, "no share from 3 opens")
            // paperboy insights ready-at-open lists it.
            let listed = try await HabitRepository(client: fixture.db.client).readyAtOpen(
                publication: "morning",
                appID: nil,
                days: 1,
                now: Date(),
                logger: fixture.db.logger
            )
            #expect(listed.map(\.broadcastID.uuidString).map { $0.lowercased() } == [id])
            #expect(listed.first?.readyAtOpen.opens == 3)
            #expect(
                try await HabitRepository(client: fixture.db.client).readyAtOpen(
                    publication: "evening",
                    appID: nil,
                    days: 1,
                    now: Date(),
                    logger: fixture.db.logger
                ).isEmpty
            )

            // Wave 1 has not finished: device 03's key stays its token's until it has.
            let hashKey = try DeviceToken(hex: devices[2]).storedCohortKey
            #expect(try await Self.habit(fixture, token: devices[2]).key == hashKey)
            try await fixture.db.client.query(
                "UPDATE broadcast_waves SET finished_at = now() WHERE broadcast_id = \(try #require(UUID(uuidString: id))) AND wave = 1",
                logger: fixture.db.logger
            )
            #expect(try await client.send(.post, "/v1/devices/\(devices[2])/opens", key: fixture.apiKey).status == .noContent)
            let moved = Int32(bitPattern: ReadingHabit.cohortKey(minute: 200, tokenKey: try DeviceToken(hex: devices[2]).cohortKey) ^ 0x8000_0000)
            #expect(try await Self.habit(fixture, token: devices[2]).key == moved)
        }
    }
}
