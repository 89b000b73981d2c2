import ArgumentParser
import Foundation
import Logging
import PaperboyStore
import PostgresNIO

/// A benchmark that could not run, for a reason the caller can act on; printed as `Error: <message>`.
struct BenchError: Error, CustomStringConvertible {
    var message: String

    init(_ message: String) {
        self.message = message
    }

    var description: String { message }
}

extension LoggingSystem {
    /// Logs to standard error at `LOG_LEVEL` (default warning: a benchmark's output is its numbers).
    static func bootstrapBench() {
        let level = ProcessInfo.processInfo.environment["LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .warning
        bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }
}

/// `--database-url`, else `DATABASE_URL`, else the `PG*` variables (as `paperboy` reads them).
struct BenchDatabaseOptions: ParsableArguments {
    @Option(
        name: .customLong("database-url"),
        help: ArgumentHelp("PostgreSQL URL (default: $DATABASE_URL, else $PGHOST and the other PG* variables).", valueName: "url")
    )
    var databaseURL: String?

    func configuration() throws -> DatabaseConfiguration {
        let configuration: DatabaseConfiguration?
        do {
            configuration = try databaseURL.map { try DatabaseConfiguration(url: $0) } ?? DatabaseConfiguration.fromEnvironment()
        } catch {
            throw BenchError("--database-url / DATABASE_URL: \(error)")
        }
        guard let configuration else {
            throw BenchError("no database: pass --database-url or set DATABASE_URL (scripts/with-postgres.sh makes a throwaway one)")
        }
        return configuration
    }

    /// Runs `body` with a running client, closing it afterwards.
    func withClient<Result: Sendable>(logger: Logger, _ body: (PostgresClient) async throws -> Result) async throws -> Result {
        var background = logger
        background.logLevel = .error
        let client = try configuration().makeClient(logger: background)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            return try await body(client)
        }
    }
}

/// A line of progress on standard error (long work says what it is doing).
func progress(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

func encodeJSON(_ value: some Encodable) throws -> Data {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    encoder.dateEncodingStrategy = .iso8601
    return try encoder.encode(value)
}

func printJSON(_ value: some Encodable) throws {
    print(String(decoding: try encodeJSON(value), as: UTF8.self))
}

func writeJSON(_ value: some Encodable, to path: String, flag: String) throws {
    do {
        try encodeJSON(value).write(to: URL(fileURLWithPath: path))
    } catch {
        throw BenchError("\(flag): cannot write \(path): \(error.localizedDescription)")
    }
}

/// The `paperboy` binary: `path` when given, else the one beside this executable (same build directory).
func paperboyBinary(_ path: String?) throws -> String {
    let candidate =
        path
        ?? URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        .appendingPathComponent("paperboy").path
    guard FileManager.default.isExecutableFile(atPath: candidate) else {
        throw BenchError(
            "--paperboy: no executable at \(candidate) (build it: swift build -c release --scratch-path .build-release --product paperboy)"
        )
    }
    return candidate
}

func median(_ values: [Double]) -> Double? {
    guard !values.isEmpty else { return nil }
    let sorted = values.sorted()
    return sorted.count.isMultiple(of: 2) ? (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2 : sorted[sorted.count / 2]
}

/// The nearest-rank percentile `p` (0–100) of `sorted`, which must be sorted ascending and not empty.
func percentile(_ sorted: [Double], _ p: Double) -> Double {
    let rank = Int((p / 100 * Double(sorted.count)).rounded(.up))
    return sorted[min(sorted.count - 1, max(0, rank - 1))]
}

extension String {
    func leftPadded(_ width: Int) -> String {
        count >= width ? " " + self : String(repeating: " ", count: width - count) + self
    }

    func rightPadded(_ width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

extension PostgresClient {
    /// The single value of a one-row, one-column query (e.g. `SELECT count(*)`).
    func value<Value: PostgresDecodable & Sendable>(_ query: PostgresQuery, as: Value.Type = Value.self, logger: Logger) async throws -> Value? {
        var found: Value?
        for try await value in try await self.query(query, logger: logger).decode(Value.self) { found = value }
        return found
    }
}
