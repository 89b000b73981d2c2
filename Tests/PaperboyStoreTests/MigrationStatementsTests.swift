import PaperboyStore
import Testing

@Suite("Splitting a migration into statements")
struct MigrationStatementsTests {
    @Test("semicolons inside quotes, dollar quotes and comments do not split")
    func quotedSemicolons() {
        let migration = Migration(
            name: "0002_x.sql",
            sql: """
                -- a comment; with a semicolon
                CREATE TABLE a (t text DEFAULT 'x;y', "odd;name" int);
                /* block; comment */
                CREATE FUNCTION f() RETURNS int AS $body$ BEGIN RETURN 1; END; $body$ LANGUAGE plpgsql;
                DO $$ BEGIN PERFORM 1; END $$;
                INSERT INTO a (t) VALUES ('it''s; fine');
                -- trailing comment only
                """
        )
        #expect(
            migration.statements == [
                "-- a comment; with a semicolon\nCREATE TABLE a (t text DEFAULT 'x;y', \"odd;name\" int)",
                "/* block; comment */\nCREATE FUNCTION f() RETURNS int AS $body$ BEGIN RETURN 1; END; $body$ LANGUAGE plpgsql",
                "DO $$ BEGIN PERFORM 1; END $$",
                "INSERT INTO a (t) VALUES ('it''s; fine')",
            ]
        )
    }

    @Test("the bundled schema splits into its statements")
    func bundledSchema() {
        let statements = Migration.bundled[0].statements
        #expect(statements.count == 10)
        #expect(statements.allSatisfy { !$0.hasSuffix(";") })
    }
}
