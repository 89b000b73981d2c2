import Foundation

/// Costly work run one at a time per key, in arrival order: the console's plan counts per publication and environment,
/// whatever number of cohorts each view asks for (``SharedAnswers`` shares one key's answer; this keeps a viewer asking
/// for 1,024 different cohort counts at once from running 1,024 counts of the same audience together). Keys with
/// nobody running or waiting are forgotten.
public actor OneAtATime<Key: Hashable & Sendable> {
    private var waiting: [Key: [CheckedContinuation<Void, Never>]] = [:]

    public init() {}

    /// Runs `body` once every earlier body of `key` has ended.
    public func run<Value: Sendable>(_ key: Key, _ body: @Sendable () async throws -> Value) async throws -> Value {
        if waiting[key] != nil {
            await withCheckedContinuation { waiting[key, default: []].append($0) }
        } else {
            waiting[key] = []
        }
        defer { next(key) }
        return try await body()
    }

    /// The next body of `key`, if one waits; else the key is forgotten.
    private func next(_ key: Key) {
        guard var queue = waiting[key], !queue.isEmpty else {
            waiting[key] = nil
            return
        }
        let first = queue.removeFirst()
        waiting[key] = queue
        first.resume()
    }

    /// Keys running or waiting now (for tests).
    public var keys: Int { waiting.count }
}
