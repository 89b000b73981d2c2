import Foundation
import PaperboyCore

/// Each worker's connection pool to a provider, as far as an outage goes: PushTransport's pool state machine
/// (`PushConnectionPool.StateMachine`) after a refused connect tries again after a backoff doubling from 0.1 s to 30 s,
/// and stays unreachable (`isUnreachable`, what the worker's batches are told) until a connect succeeds. So a worker
/// whose pool failed during an outage finds the provider back only at its first attempt after the outage's end, up to
/// 30 s after it; one that handed nothing over meanwhile never failed a connect and finds it back at once. While
/// unreachable, a push handed over is answered `notSent` at once (`failWaitingWhileUnreachable`), never held to go out
/// on the provider's return.
extension Simulation {
    /// `PushClientConfiguration.reconnectInitialBackoff` and `.reconnectMaximumBackoff`.
    static let reconnectBackoff: (initial: TimeInterval, maximum: TimeInterval) = (0.1, 30)

    struct PoolKey: Hashable {
        var worker: Int
        var incarnation: Int
        var provider: PushProvider
    }

    /// The pool's first refused connect in the current outage (the outage known by its start).
    struct PoolFailure {
        var outage: Date
        var since: Date
    }

    /// The first connect after `end` of a pool whose attempts failed from `since` on: each attempt after the backoff of
    /// the failures before it (`StateMachine.backoff(failures:)`).
    static func reconnect(since: Date, end: Date) -> Date {
        var attempt = since
        var failures = 1
        while attempt < end {
            let exponent = min(failures - 1, 20)
            attempt = attempt.addingTimeInterval(min(reconnectBackoff.initial * Double(1 << exponent), reconnectBackoff.maximum))
            failures += 1
        }
        return attempt
    }

    /// Whether `worker`'s pool to `provider` cannot reach it now: the provider takes no connection, or took none when
    /// the pool last tried and the pool has not tried again since.
    func poolUnreachable(worker: Int, provider pushProvider: PushProvider) -> Bool {
        guard let outage = provider.outage, now >= outage.from else { return false }
        if now < outage.until { return true }
        let key = PoolKey(worker: worker, incarnation: workers[worker].incarnation, provider: pushProvider)
        guard let failure = pools[key], failure.outage == outage.from else { return false }
        return now < Self.reconnect(since: failure.since, end: outage.until)
    }

    /// A push handed over through `worker`'s pool to `provider`: during an outage, the pool's connect is refused (its
    /// first failure noted). Returns whether the push is answered `notSent` at once.
    func poolRefuses(worker: Int, provider pushProvider: PushProvider) -> Bool {
        guard poolUnreachable(worker: worker, provider: pushProvider), let outage = provider.outage else { return false }
        let key = PoolKey(worker: worker, incarnation: workers[worker].incarnation, provider: pushProvider)
        if now < outage.until && pools[key]?.outage != outage.from {
            pools[key] = PoolFailure(outage: outage.from, since: now)
            poolFailures.append(PoolFailure(outage: outage.from, since: now))
        }
        if now >= outage.until { covered.insert("reconnectBackoff") }
        return true
    }
}
