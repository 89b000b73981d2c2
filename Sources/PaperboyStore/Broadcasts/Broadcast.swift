import Foundation
import PaperboyCore

/// A broadcast as stored: one edition to one environment, with the options it runs with.
public struct Broadcast: Sendable, Equatable {
    public var id: UUID
    public var editionID: UUID
    public var appID: Int
    public var publicationID: Int
    public var environment: APNsEnvironment
    public var state: BroadcastProgress.State
    public var options: BroadcastOptions
    public var origin: String
    /// The jittered start of wave 1; later waves start `waveInterval` apart from it.
    public var start: Date
    public var deadline: Date
    public var createdAt: Date
    public var finishedAt: Date?
    /// Why a `failed` broadcast failed.
    public var failure: String?
    /// Why it started later or runs slower than asked (its content origin was busy), if it did.
    public var note: String?
    /// The edition's publication (slug) and day.
    public var publication: String
    public var issueDate: String
}

/// What starting a broadcast did.
public struct BroadcastStart: Sendable, Equatable {
    public var broadcast: Broadcast
    /// False when the edition already had a broadcast in that environment and this attached to it.
    public var created: Bool
    /// Wave 1's plan, when this start created the broadcast.
    public var plan: StaggerPlan?
}
