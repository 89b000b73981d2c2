import Foundation
import Logging
import PaperboyCore
import PaperboyDispatch
import PaperboyStore
import PostgresNIO
import ServiceLifecycle

/// Fires broadcast schedules: at each instant of a schedule, starts a broadcast of the newest edition of
/// its publication.
///
/// Any number of `paperboy serve` processes run a scheduler; exactly one of them, the leader, fires. The
/// leader is the one whose database session holds a PostgreSQL advisory lock (``leadershipLockKey``);
/// the lock lives as long as the session, so the leader keeps one connection for as long as it leads,
/// and when that connection or its process dies, another scheduler takes the lock on its next tick.
///
/// A firing missed while no process ran still fires, late, as long as the edition's deadline has not
/// passed: each tick handles the latest instant at or before now that was not handled yet.
///
/// The leader also prunes the delivery ledger (``LedgerPruner``) at most once per ``pruneInterval``,
/// beside the ticks, so that a long prune never delays a firing.
public struct Scheduler: Service {
    /// The advisory lock key whose holder is the leader: `paperboy` in ASCII.
    public static let leadershipLockKey: Int64 = 0x7061_7065_7262_6F79

    /// Starts a broadcast and says what happened, e.g. `broadcast <id> started`.
    public typealias Start = @Sendable (BroadcastRequest) async throws -> String

    let client: PostgresClient
    let start: Start
    let clock: BroadcastClock
    let tickInterval: Duration
    let pruner: LedgerPruner?
    let pruneInterval: Duration
    let logger: Logger

    /// - Parameters:
    ///   - start: starts a broadcast (or attaches to a running one) and describes the result for the log.
    ///   - clock: whose time schedules are compared with (ticks themselves are real time).
    ///   - tickInterval: how often schedules are looked at, and how often a follower tries to lead.
    ///   - pruner: prunes the ledger while this scheduler leads; nil never prunes.
    ///   - pruneInterval: the least time between two prunes by one leader.
    public init(
        client: PostgresClient,
        start: @escaping Start,
        clock: BroadcastClock = .system,
        tickInterval: Duration = .seconds(15),
        pruner: LedgerPruner? = nil,
        pruneInterval: Duration = .seconds(3600),
        logger: Logger
    ) {
        self.client = client
        self.start = start
        self.clock = clock
        self.tickInterval = tickInterval
        self.pruner = pruner
        self.pruneInterval = pruneInterval
        self.logger = logger
    }

    /// Ticks until graceful shutdown or cancellation; a lost connection (and with it leadership) is
    /// logged and a new one is taken on the next tick.
    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await withSession { session in
                        try await withThrowingTaskGroup(of: Void.self) { group in
                            group.addTask {
                                while !Task.isCancelled {
                                    _ = try await session.tick(now: clock.now())
                                    try await Task.sleep(for: tickInterval)
                                }
                            }
                            if pruner != nil {
                                group.addTask {
                                    while !Task.isCancelled {
                                        _ = await session.pruneIfDue(now: clock.now())
                                        try await Task.sleep(for: tickInterval)
                                    }
                                }
                            }
                            defer { group.cancelAll() }
                            try await group.next()
                        }
                    }
                } catch {
                    if Task.isCancelled { break }
                    logger.warning(
                        "scheduler: the database session failed, leadership (if held) is lost",
                        metadata: [LogKey.error: "\(String(reflecting: error))"]
                    )
                    do { try await Task.sleep(for: tickInterval) } catch { break }
                }
            }
        }
    }

    /// Runs `body` with a session on one connection, which is held until `body` returns. The session
    /// leads from the first tick that takes the lock; leaving releases the lock.
    public func withSession<Result: Sendable>(_ body: (SchedulerSession) async throws -> Result) async throws -> Result {
        try await client.withConnection { connection in
            let session = SchedulerSession(scheduler: self, connection: connection)
            do {
                let result = try await body(session)
                await session.resign()
                return result
            } catch {
                await session.resign()
                throw error
            }
        }
    }

    /// Handles one due schedule; never throws for the schedule's own reasons, which it logs.
    func fire(_ due: DueSchedule, now: Date, repository: ScheduleRepository) async throws -> SchedulerEvent {
        let schedule = due.schedule
        let outcome: SchedulerEvent.Outcome
        if let edition = try await repository.newestEdition(
            publicationID: schedule.publicationID,
            environment: schedule.environment,
            logger: logger
        ) {
            if edition.broadcast {
                outcome = .alreadyBroadcast(editionID: edition.id)
            } else if edition.deadline <= now {
                outcome = .deadlinePassed(editionID: edition.id, deadline: edition.deadline)
            } else {
                let request = BroadcastRequest(
                    editionID: edition.id,
                    environment: schedule.environment,
                    options: schedule.options,
                    origin: "schedule:\(schedule.id)"
                )
                do {
                    outcome = .started(editionID: edition.id, result: try await start(request))
                } catch {
                    // Not marked handled: the next tick tries again while the deadline allows.
                    let event = SchedulerEvent(scheduleID: schedule.id, instant: due.instant, outcome: .failed(String(describing: error)))
                    logger.error(event.message, metadata: event.metadata)
                    return event
                }
            }
        } else {
            outcome = .noEdition
        }
        let event = SchedulerEvent(scheduleID: schedule.id, instant: due.instant, outcome: outcome)
        if case .started = outcome {
            logger.notice(event.message, metadata: event.metadata)
        } else {
            logger.info(event.message, metadata: event.metadata)
        }
        try await repository.markHandled(id: schedule.id, instant: due.instant, logger: logger)
        return event
    }
}

/// A scheduler's database session: one connection, and leadership while its advisory lock is held.
public actor SchedulerSession {
    let scheduler: Scheduler
    let connection: PostgresConnection
    /// Whether this session holds the leadership lock.
    public private(set) var isLeader = false
    /// When this session last pruned the ledger.
    private var lastPrune: Date?

    init(scheduler: Scheduler, connection: PostgresConnection) {
        self.scheduler = scheduler
        self.connection = connection
    }

    /// One step: a follower tries to take the lock; the leader fires the due schedules as of `now`.
    /// - Returns: what was done with each due schedule; empty for a follower.
    /// - Throws: when the session's connection failed (leadership is lost with it) or the database
    ///   cannot be read.
    public func tick(now: Date) async throws -> [SchedulerEvent] {
        let logger = scheduler.logger
        let key = Scheduler.leadershipLockKey
        guard !connection.isClosed else {
            isLeader = false
            throw SchedulerSessionClosed()
        }
        if isLeader {
            // The lock lives as long as the session: a live connection still holds it.
            _ = try await query("SELECT 1")
        } else {
            let rows = try await query("SELECT pg_try_advisory_lock(\(key))")
            isLeader = try rows.first?.decode(Bool.self) ?? false
            guard isLeader else { return [] }
            logger.notice("scheduler: this process leads; it fires the schedules")
        }
        let repository = ScheduleRepository(client: scheduler.client)
        var events: [SchedulerEvent] = []
        for due in try await repository.due(now: now, logger: logger) {
            events.append(try await scheduler.fire(due, now: now, repository: repository))
        }
        return events
    }

    /// The leader prunes the ledger when it has not done so for the scheduler's prune interval; a failed
    /// prune is logged and tried again after the interval.
    /// - Returns: what was pruned; nil for a follower, when not due, or when the prune failed.
    public func pruneIfDue(now: Date) async -> LedgerPruner.Result? {
        guard isLeader, let pruner = scheduler.pruner else { return nil }
        if let lastPrune, now < lastPrune.addingTimeInterval(Double(scheduler.pruneInterval.components.seconds)) { return nil }
        lastPrune = now
        do {
            return try await pruner.prune(now: now, logger: scheduler.logger)
        } catch {
            if !Task.isCancelled {
                scheduler.logger.warning("scheduler: pruning the ledger failed", metadata: [LogKey.error: "\(String(reflecting: error))"])
            }
            return nil
        }
    }

    /// Gives up leadership, so another process can take it on its next tick. When the lock cannot be
    /// released, the connection is closed, which releases it.
    func resign() async {
        guard isLeader else { return }
        isLeader = false
        // A closed connection took the lock with it (and would not answer a query).
        guard !connection.isClosed else { return }
        do {
            _ = try await query("SELECT pg_advisory_unlock(\(Scheduler.leadershipLockKey))")
            scheduler.logger.notice("scheduler: this process no longer leads")
        } catch {
            try? await connection.close()
        }
    }
}

extension SchedulerSession {
    /// How long a query on the session's connection may take before the session counts as lost.
    static let queryTimeout: Duration = .seconds(30)

    /// Runs a query on the session's connection and reads all its rows.
    ///
    /// PostgresNIO never answers a query written to a connection that has just closed, so the query is
    /// given up after ``queryTimeout`` (``answered(within:_:)``): the session ends, and the scheduler takes a new connection.
    func query(_ query: PostgresQuery) async throws -> [PostgresRow] {
        let (connection, logger) = (self.connection, scheduler.logger)
        do {
            return try await answered(within: Self.queryTimeout) { try await connection.query(query, logger: logger).collect() }
        } catch is DatabaseCallUnanswered {
            throw SchedulerSessionClosed()
        }
    }
}

/// The session's connection is closed; leadership, if held, went with it.
public struct SchedulerSessionClosed: Error, CustomStringConvertible {
    public var description: String { "the scheduler's database connection is closed" }
}

/// What the leader did with a due schedule.
public struct SchedulerEvent: Sendable, Equatable, CustomStringConvertible {
    public enum Outcome: Sendable, Equatable {
        /// A broadcast was started (or attached to); `result` is what the starter said.
        case started(editionID: UUID, result: String)
        /// The publication has no edition.
        case noEdition
        /// The newest edition is past its deadline: not useful any more.
        case deadlinePassed(editionID: UUID, deadline: Date)
        /// The newest edition has a broadcast in the schedule's environment already.
        case alreadyBroadcast(editionID: UUID)
        /// Starting failed; the instant is tried again on the next tick.
        case failed(String)
    }

    public var scheduleID: Int
    /// The scheduled instant handled.
    public var instant: Date
    public var outcome: Outcome

    public init(scheduleID: Int, instant: Date, outcome: Outcome) {
        self.scheduleID = scheduleID
        self.instant = instant
        self.outcome = outcome
    }

    /// The log line's fixed message: what was done, or why nothing was.
    public var message: Logger.Message {
        switch outcome {
        case .started: "scheduler: broadcast started"
        case .noEdition: "scheduler: nothing to broadcast: the publication has no edition"
        case .deadlinePassed: "scheduler: nothing to broadcast: the newest edition is past its deadline"
        case .alreadyBroadcast: "scheduler: nothing to broadcast: the newest edition was broadcast already"
        case .failed: "scheduler: the broadcast could not be started; retried on the next tick"
        }
    }

    /// The log line's data: which schedule, which instant, which edition, and the starter's word or the error.
    public var metadata: Logger.Metadata {
        var metadata: Logger.Metadata = [LogKey.schedule: "\(scheduleID)", LogKey.instant: "\(instant.formatted(.iso8601))"]
        switch outcome {
        case .started(let edition, let result):
            metadata[LogKey.edition] = "\(edition.uuidString.lowercased())"
            metadata[LogKey.result] = "\(result)"
        case .noEdition:
            break
        case .deadlinePassed(let edition, let deadline):
            metadata[LogKey.edition] = "\(edition.uuidString.lowercased())"
            metadata[LogKey.deadline] = "\(deadline.formatted(.iso8601))"
        case .alreadyBroadcast(let edition):
            metadata[LogKey.edition] = "\(edition.uuidString.lowercased())"
        case .failed(let error):
            metadata[LogKey.error] = "\(error)"
        }
        return metadata
    }

    /// One line for people: which schedule, which instant, and what was done or why nothing was.
    public var description: String {
        let at = "schedule \(scheduleID) at \(instant.formatted(.iso8601))"
        switch outcome {
        case .started(let edition, let result):
            return "\(at): edition \(edition.uuidString.lowercased()): \(result)"
        case .noEdition:
            return "\(at): nothing to broadcast: the publication has no edition"
        case .deadlinePassed(let edition, let deadline):
            return
                "\(at): nothing to broadcast: the newest edition \(edition.uuidString.lowercased()) is past its deadline \(deadline.formatted(.iso8601))"
        case .alreadyBroadcast(let edition):
            return "\(at): nothing to broadcast: the newest edition \(edition.uuidString.lowercased()) was broadcast already"
        case .failed(let error):
            return "\(at): the broadcast could not be started (retried on the next tick): \(error)"
        }
    }
}
