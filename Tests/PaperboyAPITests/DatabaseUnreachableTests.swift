import Foundation
import PaperboyStore
import PaperboyTesting
import Testing

/// A command whose database cannot be reached says so, naming the database and the reason, instead of
/// waiting without a word (PostgresNIO's pool waits for a connection for ever: `broadcast list` with
/// PostgreSQL down used to hang).
@Suite("Commands against a database that cannot be reached")
struct DatabaseUnreachableTests {
    @Test("nothing listening: the command fails after trying for 15 s, naming the database and the refusal", .timeLimit(.minutes(2)))
    func nothingListening() async throws {
        try #require(PaperboyBinary.isBuilt)
        let clock = ContinuousClock()
        let started = clock.now
        // Port 1 on loopback: nothing listens there, and nothing may bind it without privileges.
        let run = try await PaperboyBinary.run(["broadcast", "list", "--database-url", "postgres://paperboy@127.0.0.1:1/paperboy?sslmode=disable"])
        let took = clock.now - started
        #expect(run.status != 0)
        #expect(run.output.contains("cannot connect to PostgreSQL at postgres://paperboy@127.0.0.1:1/paperboy (tried for 15 s)"), "\(run.output)")
        #expect(run.output.contains("Connection refused"), "\(run.output)")
        #expect(took < .seconds(40), "gave up after \(took)")
    }

    @Test("no such database: the command fails at once with the server's word for it")
    func noSuchDatabase() async throws {
        try await TestDatabase.with { db in
            var missing = db.configuration
            missing.database = "no_such_database"
            let clock = ContinuousClock()
            let started = clock.now
            let run = try await PaperboyBinary.run(["broadcast", "list"], database: missing)
            #expect(run.status != 0)
            #expect(run.output.contains(#"database "no_such_database" does not exist"#), "\(run.output)")
            #expect(!run.output.contains("tried for"), "a server's refusal is not retried: \(run.output)")
            #expect(clock.now - started < .seconds(10))
        }
    }
}
