import ArgumentParser
import Foundation
import Logging
import PaperboyCore
import PaperboyStore

struct AuditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract: "Show the audit log: every change made through the console, the admin API, the CLI or by a schedule, and console sign-ins.",
        discussion: """
            Each line: when (the database's clock), where (console, admin, cli, scheduler), who (the role, the name \
            given, the client's address or the CLI's host), what, and what it named. Changes are written in the same \
            transaction as the change itself, so a change is never without its line. Sign-ins are counted, one line \
            an hour per role, name and address. Newest first.
            """
    )

    @OptionGroup var database: DatabaseOptions

    @Option(help: ArgumentHelp("Only entries of the last DURATION, e.g. 24h or 7d.", valueName: "duration"))
    var since: String?

    @Option(help: "Only the entries that name this broadcast.")
    var broadcast: String?

    @Option(help: "At most this many entries.")
    var limit = 100

    @OptionGroup var timeZone: TimeZoneOptions
    @OptionGroup var output: OutputOptions

    func validate() throws {
        _ = try sinceSeconds()
        if let broadcast, UUID(uuidString: broadcast) == nil { throw ValidationError("--broadcast: \(broadcast) is not a broadcast id (a UUID)") }
        guard (1...10_000).contains(limit) else { throw ValidationError("--limit: \(limit) is not a number from 1 to 10000") }
    }

    func sinceSeconds() throws -> TimeInterval? {
        guard let since else { return nil }
        return try DurationFlag.seconds(since, refusal: "--since: \(since) is not a duration like 24h, 7d or 90m")
    }

    func run() async throws {
        let logger = Logger(label: "paperboy.audit")
        let zone = try timeZone.zone()
        let since = try sinceSeconds().map { Date().addingTimeInterval(-$0) }
        let entries = try await withDatabase(try database.requiredConfiguration(), logger: logger) { client in
            let repository = AuditRepository(client: client)
            if let id = broadcast.flatMap(UUID.init(uuidString:)) {
                return Array(
                    try await repository.entries(broadcastID: id, logger: logger).filter { since == nil || $0.at >= since! }.reversed().prefix(limit)
                )
            }
            return try await repository.recent(limit: limit, since: since, logger: logger)
        }
        if output.json { return try printJSON(entries) }
        if entries.isEmpty {
            print("no audit entries" + (since == nil ? "" : " since \(Self.stamp(since!, timeZone: zone))"))
            return
        }
        for entry in entries { print(Self.line(entry, timeZone: zone)) }
    }

    /// `2027-01-15 05:02:11  console  operator (ana) from 192.0.2.10  cancel broadcast 3f2a…  cancelled after …`
    static func line(_ entry: AuditEntry, timeZone: TimeZone) -> String {
        let named = [
            entry.appID.map { "app \($0)" }, entry.broadcastID.map { "broadcast \($0.uuidString.lowercased())" },
            entry.editionID.map { "edition \($0.uuidString.lowercased())" },
        ].compactMap { $0 }.joined(separator: ", ")
        return [stamp(entry.at, timeZone: timeZone), entry.surface.rawValue, entry.who, entry.action, named, entry.detail]
            .filter { !$0.isEmpty }.joined(separator: "  ")
    }

    /// `2027-01-15 05:02:11` in `timeZone`.
    static func stamp(_ date: Date, timeZone: TimeZone) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = timeZone
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        return formatter.string(from: date)
    }
}
