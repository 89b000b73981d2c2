import APNs
import Foundation
import PaperboyCore
import PushSimulator
import Synchronization

/// What every connection of a simulator reports (``SimulatorLedger``: accepts with their connection and stream,
/// rejections by reason, connection events) and the random draws of failure faults. One lock, taken about once per
/// request.
final class APNsSimulatorLedger: Sendable {
    private struct State {
        var ledger: SimulatorLedger
        var random: SplitMix64
    }

    private let state: Mutex<State>
    private let failureRates: [(outcome: APNsSimulator.Outcome, probability: Double)]

    init(recordsAccepted: Bool, failureRates: [(outcome: APNsSimulator.Outcome, probability: Double)], seed: UInt64) {
        self.failureRates = failureRates.filter { $0.probability > 0 }
        self.state = Mutex(State(ledger: SimulatorLedger(recordsAccepts: recordsAccepted, now: Date()), random: SplitMix64(seed: seed)))
    }

    /// Records a valid request for `token`: accepted, unless a random failure fault answers instead.
    ///
    /// - Returns: the failure to answer, or nil when the notification was accepted.
    func admit(token: String, at now: Date, connection: Int, stream: Int) -> APNsSimulator.Outcome? {
        state.withLock { state in
            if !failureRates.isEmpty {
                var draw = state.random.nextUnitInterval()
                for (outcome, probability) in failureRates {
                    if draw < probability {
                        state.ledger.reject(outcome.reason.rawValue)
                        return outcome
                    }
                    draw -= probability
                }
            }
            state.ledger.accept(token: token, at: now, connection: connection, stream: stream)
            return nil
        }
    }

    func reject(_ reason: String) {
        state.withLock { $0.ledger.reject(reason) }
    }

    /// The new connection's number, 1 for the first.
    func connectionAccepted() -> Int {
        state.withLock { $0.ledger.connectionAccepted() }
    }

    func record(_ event: SimulatorConnectionEvent) {
        state.withLock { $0.ledger.record(event) }
    }

    func stats() -> APNsSimulator.Stats {
        state.withLock { state in
            let ledger = state.ledger
            return APNsSimulator.Stats(
                accepted: ledger.accepted,
                rejected: ledger.rejected,
                connectionsOpened: ledger.connectionsOpened,
                goAwaysSent: ledger.goAwaysSent,
                connectionsDropped: ledger.connectionsDropped,
                streamLimitViolations: ledger.streamLimitViolations,
                peakConcurrentStreams: ledger.peakConcurrentStreams,
                acceptsPerSecond: ledger.acceptsPerSecond,
                startedAt: ledger.startedAt
            )
        }
    }

    func acceptedCount(forToken hex: String) -> Int { state.withLock { $0.ledger.acceptedByToken[hex] ?? 0 } }
    func acceptedCounts() -> [String: Int] { state.withLock { $0.ledger.acceptedByToken } }
    func accepts() -> [SimulatorAccept] { state.withLock { $0.ledger.accepts } }
    func accepts(forToken hex: String) -> [SimulatorAccept] { state.withLock { $0.ledger.accepts(forToken: hex) } }

    /// Zeroes everything and restarts the per-second clock; the random draws and connection numbers go on.
    func reset() {
        state.withLock { $0.ledger.reset(now: Date()) }
    }
}
