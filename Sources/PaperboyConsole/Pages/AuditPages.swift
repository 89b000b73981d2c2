import Foundation
import Hummingbird
import Logging
import PaperboyCore
import PaperboyStore
import PaperboyText

/// The audit log: every change made in the console, through the admin API, with the CLI or by a schedule, and
/// sign-ins and sign-outs; the sessions signed in now, which an operator can end one by one or all at once.
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
            var sessions: Bool
        }

        struct SessionRow: Sendable {
            var id: String
            var who: String
            var address: String
            var signedIn: String
            var seen: String
            var ends: String
            /// This browser's own session.
            var current: Bool
            /// Unused past the idle timeout: it opens nothing any more, and goes at its end.
            var idle: Bool
        }

        var frame: Frame
        var entries: [Row]
        var sessions: [SessionRow]
        var limit: Int
        var lifetime: String
        var idle: String
        var has: Has
    }

    @Sendable func auditPage(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let session = try session(context)
        let limit = 200
        let entries = try await audit.recent(limit: limit, logger: context.logger)
        // An operator sees every session; a viewer only its own.
        let sessions = try await console.sessions(limit: 500, logger: context.logger).filter { session.role.mayAct || $0.id == session.id }
        let now = self.now
        let page = AuditPage(
            frame: frame(context, current: "/console/audit"),
            entries: entries.map(auditRow),
            sessions: sessions.map { row in
                AuditPage.SessionRow(
                    id: String(row.id),
                    who: row.name.map { "\(row.role) (\($0))" } ?? row.role,
                    address: row.address ?? "",
                    signedIn: TimeText.dateTime(row.signedInAt, timeZone: timeZone),
                    seen: TimeText.relative(row.seenAt, now: now),
                    ends: TimeText.dateTime(row.expiresAt, timeZone: timeZone),
                    current: row.id == session.id,
                    idle: now.timeIntervalSince(row.seenAt) >= configuration.idleTimeout
                )
            },
            limit: limit,
            lifetime: TerminalText.duration(configuration.sessionLifetime),
            idle: TerminalText.duration(configuration.idleTimeout),
            has: .init(entries: !entries.isEmpty, sessions: !sessions.isEmpty)
        )
        return ConsolePage.render("audit", page)
    }

    /// An operator ends one session (a laptop left signed in, a colleague who left): its row is deleted, so its
    /// cookie opens nothing from the next request on, on every replica.
    @Sendable func endSession(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let form = try await form(CSRFForm.self, request)
        let session = try formSession(request, context: context, form: form.csrf, doing: "end a session")
        let id = try RequestValue.bigID(context.parameters.get("id"), field: "id", what: "not a session's number")
        let ended = try await console.endSession(
            id: id,
            audit: auditEntry(session, request: request, action: "end session", detail: "session \(id)"),
            logger: context.logger
        )
        guard ended else {
            throw ConsolePageError(status: .notFound, heading: "No such session", message: "No session \(id) is signed in: it has ended already.")
        }
        context.logger.notice("console session ended", metadata: [LogKey.role: "\(session.role.rawValue)", "session": "\(id)"])
        if id == session.id {
            var response = ConsolePage.redirect(to: context.origin.link("/console/sign-in"))
            response.setCookie(Self.clearedCookie(origin: context.origin))
            return response
        }
        return ConsolePage.redirect(to: context.origin.link("/console/audit"))
    }

    func auditRow(_ entry: AuditEntry) -> AuditPage.Row {
        let broadcast = entry.broadcastID?.uuidString.lowercased()
        return AuditPage.Row(
            at: TimeText.dateTime(entry.at, timeZone: timeZone),
            iso: TimeText.iso(entry.at),
            surface: entry.surface.label,
            who: entry.who,
            action: entry.actionCounted,
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
