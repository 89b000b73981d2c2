import Foundation
import PaperboyStore
import PaperboyTesting
import PostgresNIO
import Testing

/// The settings every session Paperboy opens asks for (``DatabaseConfiguration/sessionSettings``), against PostgreSQL.
@Suite("Paperboy's database sessions")
struct DatabaseSessionTests {
    @Test("every connection of the pool has JIT off, whatever the server's default")
    func jitOff() async throws {
        try await TestDatabase.with { db in
            // Several at once: each pooled connection, not only the first, was opened with the setting.
            let settings = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        try await db.client.withConnection { connection in
                            var value = ""
                            for try await setting in try await connection.query(
                                "SELECT current_setting('jit'), pg_sleep(0.05)::text",
                                logger: db.logger
                            )
                            .decode((String, String).self) {
                                value = setting.0
                            }
                            return value
                        }
                    }
                }
                return try await group.reduce(into: [String]()) { $0.append($1) }
            }
            #expect(settings == ["off", "off", "off", "off"])
            // PostgreSQL's own default is on; the session's starting value (what RESET returns to) is the connection's.
            var values: (String, String) = ("", "")
            for try await row in try await db.client.query("SELECT boot_val, reset_val FROM pg_settings WHERE name = 'jit'", logger: db.logger)
                .decode((String, String).self)
            {
                values = row
            }
            #expect(values == ("on", "off"))
        }
    }
}
