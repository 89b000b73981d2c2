import Foundation

/// One notification a simulator accepted: for which token, when, and on which connection and HTTP/2 stream. A test
/// that finds a device accepted twice prints both, and the connections and streams say whether one request was
/// answered twice, or two requests came.
public struct SimulatorAccept: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The device token (lowercase hex for APNs), or FCM's target (a registration token, `topic:NAME`).
    public var token: String
    public var acceptedAt: Date
    /// The connection it came on, numbered per simulator from 1 in the order connections were accepted.
    public var connection: Int
    /// The HTTP/2 stream id; nil for a request that came over HTTP/1.1.
    public var stream: Int?

    public init(token: String, acceptedAt: Date, connection: Int, stream: Int?) {
        self.token = token
        self.acceptedAt = acceptedAt
        self.connection = connection
        self.stream = stream
    }

    public var description: String {
        let time = acceptedAt.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        return "\(token) accepted at \(time) on connection \(connection)" + (stream.map { ", stream \($0)" } ?? " (HTTP/1.1)")
    }
}

/// What happened on a simulator's HTTP/2 connection besides its requests' answers.
package enum SimulatorConnectionEvent: Sendable, Equatable {
    /// An HTTP/2 connection started (it sent its SETTINGS).
    case opened
    case goAwaySent
    /// A client opened a stream beyond the limit it had acknowledged.
    case streamLimitViolated
    /// This many streams were open at once on one connection.
    case concurrentStreams(Int)
    /// The connection was closed abruptly by a fault, its open streams unanswered.
    case dropped
}

/// The bookkeeping both simulators keep: accepts (per token, per second, and each with its connection and stream),
/// rejections by reason, connection events. Pure; each simulator keeps it behind its own lock.
package struct SimulatorLedger: Sendable {
    package private(set) var accepted = 0
    /// By the reason or code as the provider spells it.
    package private(set) var rejected: [String: Int] = [:]
    /// Accepts per whole second since start (index 0 = first second): the send rate as the provider sees it.
    package private(set) var acceptsPerSecond: [Int] = []
    package private(set) var startedAt: Date
    /// TCP connections accepted: their numbers. Never reset: a number names one connection for the simulator's life.
    package private(set) var connectionsAccepted = 0
    package private(set) var connectionsOpened = 0
    package private(set) var connectionsDropped = 0
    package private(set) var goAwaysSent = 0
    package private(set) var streamLimitViolations = 0
    package private(set) var peakConcurrentStreams = 0
    /// Whether accepts are kept one by one (``accepts``, ``acceptedByToken``); off for big benchmarks.
    package let recordsAccepts: Bool
    package private(set) var accepts: [SimulatorAccept] = []
    package private(set) var acceptedByToken: [String: Int] = [:]

    package init(recordsAccepts: Bool, now: Date) {
        self.recordsAccepts = recordsAccepts
        self.startedAt = now
    }

    /// A new connection's number: 1 for the first.
    package mutating func connectionAccepted() -> Int {
        connectionsAccepted += 1
        return connectionsAccepted
    }

    package mutating func accept(token: String, at now: Date, connection: Int, stream: Int?) {
        accepted += 1
        let second = max(0, Int(now.timeIntervalSince(startedAt)))
        if second >= acceptsPerSecond.count {
            acceptsPerSecond.append(contentsOf: repeatElement(0, count: second - acceptsPerSecond.count + 1))
        }
        acceptsPerSecond[second] += 1
        guard recordsAccepts else { return }
        accepts.append(SimulatorAccept(token: token, acceptedAt: now, connection: connection, stream: stream))
        acceptedByToken[token, default: 0] += 1
    }

    package mutating func reject(_ reason: String) {
        rejected[reason, default: 0] += 1
    }

    package mutating func record(_ event: SimulatorConnectionEvent) {
        switch event {
        case .opened: connectionsOpened += 1
        case .goAwaySent: goAwaysSent += 1
        case .streamLimitViolated: streamLimitViolations += 1
        case .concurrentStreams(let count): peakConcurrentStreams = max(peakConcurrentStreams, count)
        case .dropped: connectionsDropped += 1
        }
    }

    /// The accepts of one token, oldest first.
    package func accepts(forToken token: String) -> [SimulatorAccept] {
        accepts.filter { $0.token == token }
    }

    /// Zeroes everything and restarts the per-second clock; connection numbers go on.
    package mutating func reset(now: Date) {
        let connections = connectionsAccepted
        self = SimulatorLedger(recordsAccepts: recordsAccepts, now: now)
        connectionsAccepted = connections
    }
}
