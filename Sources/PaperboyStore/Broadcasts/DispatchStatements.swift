import Foundation
import Logging
import PostgresNIO

/// A statement the dispatch runs for every batch whose text never changes, only its values: prepared once per
/// connection instead of parsed and planned on every execution.
///
/// Planning them was most of their cost: in wave 1 at 1,000,000 devices, `pg_stat_statements` gave the batch's row
/// 1.66 ms of planning per call against 0.15 ms of execution, the due cohort 0.95 against 0.16, the take-over 0.76
/// against 0.08, and all statements together 7.1 s of planning, PostgreSQL CPU that did no work (BENCHMARKS.md, "A
/// delivery's database cost"). The text is the one the query builder makes (``sql`` is built from it once, with
/// placeholder values), so the statement and its catalogue entry in ``RequestStatements`` cannot drift; the
/// parameter types are stated, so that a first execution with a NULL does not leave one to the server.
protocol DispatchStatementText: Sendable {
    /// The prepared statement's name: PostgreSQL keeps 63 bytes of it, so not the type's full name (every
    /// `DispatchStatement<BroadcastRepository.…>` would be the same statement there).
    static var name: String { get }
    /// The statement's text, as its query builder makes it.
    static var sql: String { get }
    /// The types of the values its builder binds, in order.
    static var bindingDataTypes: [PostgresDataType] { get }
}

/// ``DispatchStatementText`` as PostgresNIO prepares it: one statement per text type, its rows left as they come.
struct DispatchStatement<Text: DispatchStatementText>: PostgresPreparedStatement {
    typealias Row = PostgresRow
    static var name: String { "paperboy_dispatch_" + Text.name }
    static var sql: String { Text.sql }
    static var bindingDataTypes: [PostgresDataType] { Text.bindingDataTypes }

    let bindings: PostgresBindings

    func makeBindings() -> PostgresBindings { bindings }
    func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
}

extension PostgresConnection {
    /// Runs `query` (built by the builder `Text` names) as the prepared statement `Text` and returns its rows; a
    /// failure closes the connection (``executePrepared(_:logger:)``).
    func run<Text: DispatchStatementText>(_ text: Text.Type, _ query: PostgresQuery, logger: Logger) async throws -> [PostgresRow] {
        precondition(query.sql == Text.sql, "\(Text.self): the query's text is not the prepared one")
        return try await executePrepared(DispatchStatement<Text>(bindings: query.binds), logger: logger)
    }
}

extension BroadcastRepository {
    /// ``batchQuery(id:)``.
    enum BatchText: DispatchStatementText {
        static let name = "batch"
        static let sql = batchQuery(id: 0).sql
        static let bindingDataTypes: [PostgresDataType] = [.int8]
    }

    /// ``dueCohortQuery(dueBy:excludingApps:)``.
    enum DueCohortText: DispatchStatementText {
        static let name = "due_cohort"
        static let sql = dueCohortQuery(dueBy: .distantPast).sql
        static let bindingDataTypes: [PostgresDataType] = [.timestamptz, .int8Array]
    }

    /// ``takeOverQuery(owner:duration:now:excluding:excludingApps:excludingProviders:expired:grace:)``.
    enum TakeOverText: DispatchStatementText {
        static let name = "take_over"
        static let sql = takeOverQuery(owner: "", duration: 0, now: nil, excluding: []).sql
        static let bindingDataTypes: [PostgresDataType] = [
            .text, .timestamptz, .float8, .bool, .timestamptz, .float8, .int8Array, .int8Array, .int8Array, .int2Array,
        ]
    }

    /// ``originQuery(broadcastID:)``.
    enum OriginText: DispatchStatementText {
        static let name = "origin"
        static let sql = originQuery(broadcastID: .init()).sql
        static let bindingDataTypes: [PostgresDataType] = [.uuid]
    }

    /// ``broadcastByIDQuery(_:)``.
    enum BroadcastByIDText: DispatchStatementText {
        static let name = "broadcast"
        static let sql = broadcastByIDQuery(.init()).sql
        static let bindingDataTypes: [PostgresDataType] = [.uuid]
    }

    /// ``countersQuery(sent:accepted:rejected:skipped:providers:broadcastID:wave:cohort:)``.
    enum CountersText: DispatchStatementText {
        static let name = "counters"
        static let sql = countersQuery(
            sent: 0,
            accepted: 0,
            rejected: "{}",
            skipped: "{}",
            providers: "{}",
            broadcastID: .init(),
            wave: 0,
            cohort: 0
        ).sql
        static let bindingDataTypes: [PostgresDataType] = [.int8, .int8, .text, .text, .uuid, .int2, .int8, .text]
    }

    /// ``ledgerQuery(broadcastID:wave:cohort:deviceIDs:sentAt:outcomes:reasons:background:keepingRecorded:)``.
    enum LedgerText: DispatchStatementText {
        static let name = "ledger"
        static let sql = ledgerText(keepingRecorded: false)
        static let bindingDataTypes: [PostgresDataType] = [
            .uuid, .int2, .int8, .int8Array, .timestamptzArray, .textArray, .textArray, .boolArray,
        ]
    }

    /// ``ledgerQuery(broadcastID:wave:cohort:deviceIDs:sentAt:outcomes:reasons:background:keepingRecorded:)``, keeping
    /// the rows recorded before.
    enum LedgerKeepingText: DispatchStatementText {
        static let name = "ledger_keeping"
        static let sql = ledgerText(keepingRecorded: true)
        static let bindingDataTypes = LedgerText.bindingDataTypes
    }

    /// The ledger's INSERT as its builder makes it, with placeholder values.
    private static func ledgerText(keepingRecorded: Bool) -> String {
        ledgerQuery(
            broadcastID: .init(),
            wave: 1,
            cohort: 0,
            deviceIDs: [],
            sentAt: [],
            outcomes: [],
            reasons: [],
            background: [],
            keepingRecorded: keepingRecorded
        ).sql
    }

    /// ``RequestStatements/queuePushes(broadcastID:cohort:deviceIDs:)``.
    enum QueuePushesText: DispatchStatementText {
        static let name = "queue_pushes"
        static let sql = RequestStatements.queuePushes(broadcastID: .init(), cohort: 0, deviceIDs: []).sql
        static let bindingDataTypes: [PostgresDataType] = [.uuid, .int8, .int8Array]
    }
}
