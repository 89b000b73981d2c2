import Foundation
import PaperboyClient

/// A lock around a value, for the fakes' state.
final class Guarded<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func callAsFunction<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

/// Time that moves only when the test says: ``advance()`` moves it to the earliest sleeper's instant once the tasks
/// have settled, so that a budget of 25 seconds, a download that trickles for 5 minutes and a server that answers after
/// a minute are tested in milliseconds, in the order the instants give.
final class VirtualTimer: WakeTimer, @unchecked Sendable {
    private struct Sleeper {
        var id: Int
        var target: Date
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: Date
        var sleepers: [Sleeper] = []
        var nextID = 0
        var cancelledEarly: Set<Int> = []
        /// Counts every change, so that ``settle()`` sees when the tasks stopped doing anything.
        var changes = 0
    }

    private let state: Guarded<State>

    init(now: Date) {
        state = Guarded(State(now: now))
    }

    var now: Date { state { $0.now } }

    /// Something happened that the test's tasks may react to (a fake was called).
    func touch() { state { $0.changes += 1 } }

    func sleep(seconds: TimeInterval) async throws {
        guard seconds > 0 else { return try Task.checkCancellation() }
        let id = state { state -> Int in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let early = state { state -> Bool in
                    state.changes += 1
                    if state.cancelledEarly.remove(id) != nil { return true }
                    state.sleepers.append(Sleeper(id: id, target: state.now.addingTimeInterval(seconds), continuation: continuation))
                    return false
                }
                if early { continuation.resume(throwing: CancellationError()) }
            }
        } onCancel: {
            let sleeper = state { state -> Sleeper? in
                state.changes += 1
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else {
                    state.cancelledEarly.insert(id)
                    return nil
                }
                return state.sleepers.remove(at: index)
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Waits until the tasks have settled, then moves time to the earliest sleeper's instant and wakes those due.
    /// - Returns: false when nobody sleeps.
    func advance() async -> Bool {
        await settle()
        let due = state { state -> [Sleeper]? in
            guard let earliest = state.sleepers.map(\.target).min() else { return nil }
            state.now = max(state.now, earliest)
            let due = state.sleepers.filter { $0.target <= state.now }
            state.sleepers.removeAll { $0.target <= state.now }
            state.changes += 1
            return due
        }
        guard let due else { return false }
        for sleeper in due { sleeper.continuation.resume() }
        return true
    }

    /// Moves time on by `seconds` (what a step took), waking the sleepers due.
    func pass(_ seconds: TimeInterval) {
        let due = state { state -> [Sleeper] in
            state.now = state.now.addingTimeInterval(seconds)
            let due = state.sleepers.filter { $0.target <= state.now }
            state.sleepers.removeAll { $0.target <= state.now }
            state.changes += 1
            return due
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// Real milliseconds until nothing changed for 20 of them: the tasks have done what they can at this instant. (A
    /// heuristic: a task starved of a thread for longer would let time move before it waits; Swift Testing's parallel
    /// tests on two cores were seen to need far less.)
    private func settle() async {
        var last = -1
        var quiet = 0
        while quiet < 5 {
            try? await Task.sleep(nanoseconds: 4_000_000)
            let changes = state { $0.changes }
            if changes == last { quiet += 1 } else { (last, quiet) = (changes, 0) }
        }
    }

    /// Runs `operation` to its end, moving time whenever its tasks wait for it.
    /// - Returns: its value and the instant it ended at.
    func run<Value: Sendable>(_ operation: @escaping @Sendable () async -> Value) async -> (value: Value, at: Date) {
        let result = Guarded<(Value, Date)?>(nil)
        let task = Task {
            let value = await operation()
            result { $0 = (value, self.now) }
            self.touch()
        }
        let started = Date()
        while result({ $0 }) == nil {
            if await advance() { continue }
            if Date().timeIntervalSince(started) > 20 { break }
        }
        await task.value
        let (value, at) = result { $0 }!
        return (value, at)
    }
}
