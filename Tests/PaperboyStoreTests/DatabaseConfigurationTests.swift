import PaperboyStore
import Testing

/// How long a connection may take to open, as libpq reads it: `connect_timeout` in the URL, `PGCONNECT_TIMEOUT` in
/// the environment. Bounded where it is parsed, refused naming the setting.
@Suite("The database URL's connect_timeout")
struct DatabaseConfigurationTests {
    @Test("connect_timeout in the URL and PGCONNECT_TIMEOUT set the connect timeout; 10 s without them")
    func connectTimeout() throws {
        #expect(try DatabaseConfiguration(url: "postgres://u@db:5432/paperboy").connectTimeout == .seconds(10))
        #expect(try DatabaseConfiguration(url: "postgres://u@db:5432/paperboy?sslmode=require&connect_timeout=30").connectTimeout == .seconds(30))
        let fromEnvironment = try DatabaseConfiguration.fromEnvironment(["PGHOST": "db", "PGCONNECT_TIMEOUT": "45"])
        #expect(fromEnvironment?.connectTimeout == .seconds(45))
        #expect(try DatabaseConfiguration.fromEnvironment(["PGHOST": "db", "PGCONNECT_TIMEOUT": ""])?.connectTimeout == .seconds(10))
    }

    @Test(
        "a connect_timeout that is not whole seconds from 1 to 600 is refused naming it (libpq's 0, wait for ever, included)",
        arguments: ["0", "-5", "601", "2.5", "ten", ""]
    )
    func badConnectTimeout(_ value: String) throws {
        let inURL = #expect(throws: DatabaseConfigurationError.self) {
            try DatabaseConfiguration(url: "postgres://u@db/paperboy?connect_timeout=\(value)")
        }
        #expect(inURL?.message == "connect_timeout in the database URL is whole seconds from 1 to 600, not '\(value)'")
        guard !value.isEmpty else { return }
        let inEnvironment = #expect(throws: DatabaseConfigurationError.self) {
            try DatabaseConfiguration.fromEnvironment(["PGHOST": "db", "PGCONNECT_TIMEOUT": value])
        }
        #expect(inEnvironment?.message == "PGCONNECT_TIMEOUT is whole seconds from 1 to 600, not '\(value)'")
    }
}
