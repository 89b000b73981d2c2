import Foundation
import Synchronization

/// Where a batch being sent hears of things while it waits: the providers' answers (each send runs in a task of its
/// own and leaves its answers here) and news of its lease or a drain (a poke). ``wait(until:clock:)`` returns at the
/// instant or at the first news, whichever comes first.
final class BatchMailbox: Sendable {
    private struct Signal {
        /// News came while nobody waited: the next wait returns at once.
        var pending = false
        var waiter: (id: UInt64, continuation: CheckedContinuation<Void, Never>)?
        var lastID: UInt64 = 0
        /// Waits up to this id were cancelled, perhaps before they began to wait.
        var cancelledThrough: UInt64 = 0
    }

    private let answers = Mutex<[BatchSendMachine.Answer]>([])
    private let signal = Mutex(Signal())

    /// A send's answers.
    func deposit(_ new: [BatchSendMachine.Answer]) {
        answers.withLock { $0.append(contentsOf: new) }
        poke()
    }

    /// News that is not an answer: the lease was lost or the broadcast cancelled, or the worker drains.
    func poke() {
        let waiter = signal.withLock { signal -> CheckedContinuation<Void, Never>? in
            guard let waiter = signal.waiter else {
                signal.pending = true
                return nil
            }
            signal.waiter = nil
            return waiter.continuation
        }
        waiter?.resume()
    }

    /// The answers that came in since the last call.
    func take() -> [BatchSendMachine.Answer] {
        answers.withLock { answers in
            defer { answers.removeAll() }
            return answers
        }
    }

    /// Returns at `instant` on `clock`, or as soon as there is news (at once if some came in since the last wait).
    /// `Date.distantFuture` waits for news alone.
    func wait(until instant: Date, clock: BroadcastClock) async {
        await withTaskGroup(of: Void.self) { group in
            if instant < .distantFuture {
                group.addTask { try? await clock.sleep(instant) }
            }
            group.addTask { await self.news() }
            await group.next()
            group.cancelAll()
        }
    }

    private func news() async {
        let id = signal.withLock { signal in
            signal.lastID += 1
            return signal.lastID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = signal.withLock { signal -> Bool in
                    if signal.cancelledThrough >= id { return true }
                    if signal.pending {
                        signal.pending = false
                        return true
                    }
                    signal.waiter = (id, continuation)
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiter = signal.withLock { signal -> CheckedContinuation<Void, Never>? in
                signal.cancelledThrough = max(signal.cancelledThrough, id)
                guard let waiter = signal.waiter, waiter.id == id else { return nil }
                signal.waiter = nil
                return waiter.continuation
            }
            waiter?.resume()
        }
    }
}
