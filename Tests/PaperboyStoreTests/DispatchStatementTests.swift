import Foundation
import PaperboyCore
import PostgresNIO
import Testing

@testable import PaperboyStore

/// The dispatch's prepared statements (``DispatchStatementText``): a connection prepares each text once and runs it
/// with every batch's values, so the text its builder makes must not depend on the values, the bound values must be
/// as many as the stated types, and each name must stay apart from the others in the 63 bytes PostgreSQL keeps.
@Suite("Dispatch statements prepared once per connection")
struct DispatchStatementTests {
    typealias R = BroadcastRepository

    /// Each text with a query its builder made from values unlike the ones ``DispatchStatementText/sql`` is made
    /// from (nil against a date, lists with members, other numbers).
    static let built: [(name: String, sql: String, types: Int, query: PostgresQuery)] = [
        row(R.BatchText.self, R.batchQuery(id: 42)),
        row(R.DueCohortText.self, R.dueCohortQuery(dueBy: Date(timeIntervalSince1970: 1_800_000_000), excludingApps: [3, 4])),
        row(
            R.TakeOverText.self,
            R.takeOverQuery(
                owner: "worker-2",
                duration: 30,
                now: Date(timeIntervalSince1970: 1_800_000_000),
                excluding: [7, 8],
                excludingApps: [1],
                excludingProviders: [(appID: 1, provider: .fcm)],
                expired: false,
                grace: 5
            )
        ),
        row(R.OriginText.self, R.originQuery(broadcastID: UUID())),
        row(R.BroadcastByIDText.self, R.broadcastByIDQuery(UUID())),
        row(
            R.CountersText.self,
            R.countersQuery(
                sent: 1000,
                accepted: 990,
                rejected: #"{"BadDeviceToken": 10}"#,
                skipped: #"{"budget": 2}"#,
                providers: #"{"apns/sent": 1000}"#,
                broadcastID: UUID(),
                wave: 2,
                cohort: 15
            )
        ),
        row(
            R.LedgerText.self,
            R.ledgerQuery(
                broadcastID: UUID(),
                wave: 3,
                cohort: 1,
                deviceIDs: [1, 2],
                sentAt: [Date(), Date()],
                outcomes: ["accepted", "rejected"],
                reasons: ["", "Unregistered"],
                background: [true, false]
            )
        ),
        row(
            R.LedgerKeepingText.self,
            R.ledgerQuery(
                broadcastID: UUID(),
                wave: 2,
                cohort: 4,
                deviceIDs: [9],
                sentAt: [Date()],
                outcomes: ["fateUnknown"],
                reasons: [""],
                background: [true],
                keepingRecorded: true
            )
        ),
        row(R.QueuePushesText.self, RequestStatements.queuePushes(broadcastID: UUID(), cohort: 3, deviceIDs: [5, 6, 7])),
    ]

    static func row<Text: DispatchStatementText>(_ text: Text.Type, _ query: PostgresQuery) -> (String, String, Int, PostgresQuery) {
        (DispatchStatement<Text>.name, Text.sql, Text.bindingDataTypes.count, query)
    }

    @Test("the text a builder makes does not depend on the values, and binds as many values as the types stated")
    func textsAreFixed() {
        for statement in Self.built {
            #expect(statement.query.sql == statement.sql, "\(statement.name): the text changes with the values")
            #expect(statement.query.binds.count == statement.types, "\(statement.name): \(statement.query.binds.count) values bound")
        }
    }

    @Test("every prepared statement's name is its own within the 63 bytes PostgreSQL keeps of it")
    func namesStayApart() {
        let names =
            Self.built.map(\.name) + [RecordReceipt.name, RecordReceipts.name, RegisterDevice.name, ReadDeviceHabit.name, WriteOpen.name]
        for name in names { #expect(name.utf8.count <= 63, "\(name) is longer than PostgreSQL keeps") }
        #expect(Set(names.map { String(decoding: $0.utf8.prefix(63), as: UTF8.self) }).count == names.count)
    }
}
