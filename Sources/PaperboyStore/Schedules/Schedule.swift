import Foundation
import PaperboyCore

/// A broadcast schedule: the newest edition of a publication is broadcast at the instants of a cron
/// expression on the wall clock of an IANA time zone, with these options.
public struct Schedule: Sendable, Codable, Equatable {
    public var id: Int
    public var appID: Int
    /// The publication's slug, e.g. `morning`.
    public var publication: String
    public var publicationID: Int
    public var environment: APNsEnvironment
    /// The cron expression, e.g. `0 5 * * *`.
    public var cron: String
    /// The IANA time zone the expression is read in, e.g. `Asia/Tokyo`.
    public var timeZone: String
    public var options: BroadcastOptions
    public var createdAt: Date
    /// The scheduled instant handled most recently: fired, or skipped with a logged reason.
    public var lastInstant: Date?

    enum CodingKeys: String, CodingKey {
        case id
        case appID = "appId"
        case publication
        case publicationID = "publicationId"
        case environment, cron, timeZone, options, createdAt, lastInstant
    }

    /// The parsed expression and zone; nil only for a row that bypassed validation.
    public var cronSchedule: (CronSchedule, TimeZone)? {
        guard let schedule = try? CronSchedule(parsing: cron), let zone = TimeZone(identifier: timeZone) else { return nil }
        return (schedule, zone)
    }

    /// The first instant this schedule fires after `date`.
    public func next(after date: Date) -> Date? {
        guard let (schedule, zone) = cronSchedule else { return nil }
        return schedule.next(after: date, in: zone)
    }

    /// The latest instant this schedule fires at or before `date`.
    public func latestInstant(atOrBefore date: Date) -> Date? {
        guard let (schedule, zone) = cronSchedule else { return nil }
        return schedule.previous(atOrBefore: date, in: zone)
    }
}

/// A schedule whose latest instant has not been handled yet.
public struct DueSchedule: Sendable, Equatable {
    public var schedule: Schedule
    /// The latest scheduled instant at or before now; it may be a while ago when no process was running.
    public var instant: Date

    public init(schedule: Schedule, instant: Date) {
        self.schedule = schedule
        self.instant = instant
    }
}

/// The newest edition of a publication, with what the scheduler needs to decide whether to broadcast it.
public struct NewestEdition: Sendable, Equatable {
    public var id: UUID
    public var issueDate: String
    public var deadline: Date
    public var publishedAt: Date
    /// Whether a broadcast of it in the environment asked about exists in any state but `cancelled`.
    public var broadcast: Bool

    public init(id: UUID, issueDate: String, deadline: Date, publishedAt: Date, broadcast: Bool) {
        self.id = id
        self.issueDate = issueDate
        self.deadline = deadline
        self.publishedAt = publishedAt
        self.broadcast = broadcast
    }
}
