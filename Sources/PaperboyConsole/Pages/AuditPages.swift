import Foundation
import Hummingbird
import Logging
import PaperboyCore
import PaperboyStore
import PaperboyText

/// The audit log: every change made in the console or through the admin API, and sign-ins and sign-outs; and
/// signing everyone out.
extension ConsoleRoutes {
    struct AuditPage: Sendable {
        struct Row: Sendable {
            var at: String
            var iso: String
            var surface: String
            var who: String
            var action: String
            var href: String?
            var label: String?
            var detail: String
        }

        struct Has: Sendable {
            var entries: Bool
        }

        var frame: Frame
        var entries: [Row]
        var limit: Int
        var lifetime: String
        var idle: String
        var has: Has
    }

    @Sendable func auditPage(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        _ = try session(context)
        let limit = 200
        let entries = try await audit.recent(limit: limit, logger: context.logger)
        let page = AuditPage(
            frame: frame(context, current: "/console/audit"),
            entries: entries.map(auditRow),
            limit: limit,
            lifetime: TerminalText.duration(configuration.sessionLifetime),
            idle: TerminalText.duration(configuration.idleTimeout),
            has: .init(entries: !entries.isEmpty)
        )
        return ConsolePage.render("audit", page)
    }

    func auditRow(_ entry: AuditEntry) -> AuditPage.Row {
        let broadcast = entry.broadcastID?.uuidString.lowercased()
        return AuditPage.Row(
            at: TimeText.dateTime(entry.at, timeZone: timeZone),
            iso: TimeText.iso(entry.at),
            surface: entry.surface == .console ? "console" : "admin API",
            who: entry.who,
            action: entry.action,
            href: broadcast.map { "/console/broadcasts/\($0)" },
            label: broadcast.map { String($0.prefix(8)) },
            detail: entry.detail
        )
    }
}

/// What the plan page counts, per publication, environment and number of cohorts, shared by the page views that ask at
/// once and kept a while (``SharedAnswers``).
enum PlanCountCache {
    struct Key: Hashable, Sendable {
        var publicationID: Int
        var environment: String
        var cohorts: Int
    }

    /// Whose audience a count reads: counts of one publication and environment run one at a time, whatever number of
    /// cohorts each asks for (``OneAtATime``).
    struct Audience: Hashable, Sendable {
        var publicationID: Int
        var environment: String
    }

    /// What the plan page counts: the targets per cohort, and where the readers' habits put them (issue 37).
    struct Counts: Sendable {
        var targets: [Int]
        var habits: [HabitOrder.Count]
    }

    static func make(timeToLive: TimeInterval) -> SharedAnswers<Key, Counts> {
        SharedAnswers(timeToLive: timeToLive, capacity: 256)
    }
}
