import Foundation

/// Answers that cost the database to compute (a plan's counts, an ended broadcast's wake rates, the readiness check),
/// kept per key for a while so that page views and probes do not repeat them: callers that ask for the same key at once share one computation, an
/// answer is kept ``timeToLive``, and at most ``capacity`` keys are kept, the oldest answer going first (a viewer
/// paging through many keys evicts one at a time, not every answer at once).
public actor SharedAnswers<Key: Hashable & Sendable, Value: Sendable> {
    public let timeToLive: TimeInterval
    public let capacity: Int
    private var entries: [Key: (value: Value, at: Date)] = [:]
    private var running: [Key: Task<(value: Value, at: Date), any Error>] = [:]

    public init(timeToLive: TimeInterval, capacity: Int) {
        precondition(capacity > 0, "a cache keeps at least one answer")
        self.timeToLive = timeToLive
        self.capacity = capacity
    }

    /// The answer for `key`: one younger than ``timeToLive``, else the computation running for it now, else
    /// `compute()`'s, kept from `now`.
    /// - Returns: the answer and when it was computed.
    public func value(_ key: Key, now: Date, compute: @escaping @Sendable () async throws -> Value) async throws -> (value: Value, at: Date) {
        if let hit = entries[key], now.timeIntervalSince(hit.at) < timeToLive, now >= hit.at { return (hit.value, hit.at) }
        if let task = running[key] { return try await task.value }
        let task = Task { (value: try await compute(), at: now) }
        running[key] = task
        defer { running[key] = nil }
        let answer = try await task.value
        if entries[key] == nil, entries.count >= capacity, let oldest = entries.min(by: { $0.value.at < $1.value.at })?.key {
            entries[oldest] = nil
        }
        entries[key] = answer
        return answer
    }

    /// How many answers are kept now.
    public var count: Int { entries.count }
}
