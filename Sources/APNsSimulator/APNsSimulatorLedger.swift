import APNs
import Foundation
import Synchronization

/// What every connection of a simulator reports: accepts (per token and per second), rejections by reason,
/// connection events, and the random draws of failure faults. One lock, taken about once per request.
final class APNsSimulatorLedger: Sendable {
    private struct State {
        var accepted = 0
        var rejected: [String: Int] = [:]
        var connectionsOpened = 0
        /// TCP connections accepted, those given no HTTP/2 handler included: numbers them for the faults.
        var connectionsAccepted = 0
        var goAwaysSent = 0
        var connectionsDropped = 0
        var streamLimitViolations = 0
        var peakConcurrentStreams = 0
        var acceptsPerSecond: [Int] = []
        var startedAt = Date()
        var acceptedByToken: [String: Int] = [:]
        var random: SplitMix64
    }

    private let state: Mutex<State>
    private let recordsAccepted: Bool
    private let failureRates: [(outcome: APNsSimulator.Outcome, probability: Double)]

    init(recordsAccepted: Bool, failureRates: [(outcome: APNsSimulator.Outcome, probability: Double)], seed: UInt64) {
        self.recordsAccepted = recordsAccepted
        self.failureRates = failureRates.filter { $0.probability > 0 }
        self.state = Mutex(State(random: SplitMix64(seed: seed)))
    }

    /// Records a valid request for `token`: accepted, unless a random failure fault answers instead.
    ///
    /// - Returns: the failure to answer, or nil when the notification was accepted.
    func admit(token: String, at now: Date) -> APNsSimulator.Outcome? {
        state.withLock { state in
            if !failureRates.isEmpty {
                var draw = state.random.nextUnitInterval()
                for (outcome, probability) in failureRates {
                    if draw < probability {
                        state.rejected[outcome.reason.rawValue, default: 0] += 1
                        return outcome
                    }
                    draw -= probability
                }
            }
            state.accepted += 1
            let second = max(0, Int(now.timeIntervalSince(state.startedAt)))
            if second >= state.acceptsPerSecond.count {
                state.acceptsPerSecond.append(contentsOf: repeatElement(0, count: second - state.acceptsPerSecond.count + 1))
            }
            state.acceptsPerSecond[second] += 1
            if recordsAccepted { state.acceptedByToken[token, default: 0] += 1 }
            return nil
        }
    }

    func reject(_ reason: APNsReason) {
        state.withLock { $0.rejected[reason.rawValue, default: 0] += 1 }
    }

    func connectionOpened() { state.withLock { $0.connectionsOpened += 1 } }
    /// The new connection's number, 1 for the first since start or ``reset()``.
    func connectionAccepted() -> Int {
        state.withLock { state in
            state.connectionsAccepted += 1
            return state.connectionsAccepted
        }
    }
    func goAwaySent() { state.withLock { $0.goAwaysSent += 1 } }
    func connectionDropped() { state.withLock { $0.connectionsDropped += 1 } }
    func streamLimitViolated() { state.withLock { $0.streamLimitViolations += 1 } }

    func concurrentStreams(_ count: Int) {
        state.withLock { $0.peakConcurrentStreams = max($0.peakConcurrentStreams, count) }
    }

    func stats() -> APNsSimulator.Stats {
        state.withLock { state in
            APNsSimulator.Stats(
                accepted: state.accepted,
                rejected: state.rejected,
                connectionsOpened: state.connectionsOpened,
                goAwaysSent: state.goAwaysSent,
                connectionsDropped: state.connectionsDropped,
                streamLimitViolations: state.streamLimitViolations,
                peakConcurrentStreams: state.peakConcurrentStreams,
                acceptsPerSecond: state.acceptsPerSecond,
                startedAt: state.startedAt
            )
        }
    }

    func acceptedCount(forToken hex: String) -> Int { state.withLock { $0.acceptedByToken[hex] ?? 0 } }
    func acceptedCounts() -> [String: Int] { state.withLock { $0.acceptedByToken } }

    /// Zeroes everything and restarts the per-second clock; the random draws go on where they were.
    func reset() {
        state.withLock { state in
            state = State(random: state.random)
        }
    }
}

/// A small, fast, seedable generator (SplitMix64): deterministic fault draws and message ids.
struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }

    /// A uniform value in 0..<1.
    mutating func nextUnitInterval() -> Double {
        Double(next() >> 11) * 0x1.0p-53
    }
}
