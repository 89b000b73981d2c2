import Foundation
import PaperboyCore

/// What one worker says of one app's provider (`sender_status`, migration 0014).
public struct SenderStatus: Sendable, Equatable {
    public var appID: Int
    public var provider: PushProvider
    public var worker: String
    /// When it last recorded pushes of the app through the provider (at most 30 s old while it sends).
    public var lastSentAt: Date?
    /// Why it cannot send for the app now; nil when it can.
    public var problem: String?
    public var problemSince: Date?
    public var updatedAt: Date

    public init(
        appID: Int,
        provider: PushProvider,
        worker: String,
        lastSentAt: Date? = nil,
        problem: String? = nil,
        problemSince: Date? = nil,
        updatedAt: Date
    ) {
        self.appID = appID
        self.provider = provider
        self.worker = worker
        self.lastSentAt = lastSentAt
        self.problem = problem
        self.problemSince = problemSince
        self.updatedAt = updatedAt
    }
}

/// A running broadcast that has batches given back because a worker could not send through a provider, with what
/// every worker says of that app and provider: what the store reads for the rule
/// that fails a broadcast nobody can send (`UnsendablePolicy`).
public struct GivenBackBroadcast: Sendable, Equatable {
    public var broadcastID: UUID
    public var appID: Int
    public var statuses: [SenderStatus]
    /// Per provider, when the oldest of its batches still given back for that provider was given back: how long the
    /// broadcast has waited for a worker that can send through it.
    public var givenBackSince: [PushProvider: Date]

    public init(broadcastID: UUID, appID: Int, statuses: [SenderStatus], givenBackSince: [PushProvider: Date] = [:]) {
        self.broadcastID = broadcastID
        self.appID = appID
        self.statuses = statuses
        self.givenBackSince = givenBackSince
    }
}
