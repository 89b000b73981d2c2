import Foundation
import Testing

@testable import PaperboyStore

/// The pgbench scripts the benchmarks run (`scripts/bench-registration.sh`) are the statements serve runs, with each
/// parameter replaced by a value or a pgbench variable: a statement changed in Swift and not in its script would
/// measure a statement nobody runs (the registration script once named a unique index a migration had replaced, and
/// the receipt script lacked the wake context).
@Suite("pgbench scripts run the statements serve runs")
struct PgbenchScriptTests {
    @Test("scripts/pgbench-register.sql is RegisterDevice's statement")
    func register() throws {
        try expectScript(
            "pgbench-register.sql",
            is: RegisterDevice.sql,
            with: [
                1: "1", 2: "ARRAY['morning']", 3: "1", 4: "0", 5: "0", 6: "0", 7: "hashtext(:r::text)", 8: "sha256(:r::text::bytea)",
                9: "true", 10: "false", 11: "2", 12: "'Asia/Tokyo'", 13: "'5.1'", 14: "'17.4'", 15: "'iPad13,1'", 16: "'ja_JP'", 17: "false",
                18: "false",
            ]
        )
        #expect(RegisterDevice.bindingDataTypes.count == 18)
    }

    @Test("scripts/pgbench-receipt.sql is RecordReceipt's statement")
    func receipt() throws {
        try expectScript(
            "pgbench-receipt.sql",
            is: RecordReceipt.sql,
            with: [
                1: "1", 2: "(SELECT token FROM devices WHERE id = :id)", 3: "''::bytea", 4: ":edition::uuid", 5: "'newData'", 6: "52428800",
                7: "4.5", 8: "1", 9: "true", 10: "false", 11: "true", 12: "1", 13: "20",
            ]
        )
        #expect(RecordReceipt.bindingDataTypes.count == 13)
    }

    /// The script's statement (its lines after the comments and `\set`s) against `sql` with `$n` replaced by
    /// `values[n]`, both with their whitespace collapsed.
    private func expectScript(_ name: String, is sql: String, with values: [Int: String]) throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("scripts").appendingPathComponent(name)
        let lines = try String(contentsOf: url, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        let statement = lines.drop { $0.hasPrefix("--") || $0.hasPrefix("\\set") }.joined(separator: "\n")
        let parameter = /\$(\d+)/
        var missing: [Int] = []
        let expected = sql.replacing(parameter) { match in
            let n = Int(match.output.1)!
            guard let value = values[n] else {
                missing.append(n)
                return "$\(n)"
            }
            return value
        }
        #expect(missing.isEmpty, "\(name): no value for parameters \(missing)")
        #expect(collapsed(statement) == collapsed(expected) + ";", "\(name) differs from the statement:\n\(expected)")
    }

    private func collapsed(_ text: String) -> String {
        text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }
}
