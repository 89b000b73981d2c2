/// When the receipts waiting in a ``ReceiptBatcher`` go to the database, and how many together: the batcher's policy,
/// pure, so that it is tested without a database or a clock.
///
/// A statement of receipts costs PostgreSQL about 0.2 ms whatever it holds, and about 0.024 ms more for each receipt
/// (pgbench on ``RecordReceipts`` at 1,000,000 devices, issue 49): 0.044 ms a receipt in batches of 10, 0.029 in
/// batches of 25, 0.24 alone. Started as soon as a connection was free, the batches of a morning held about 10 and half
/// of the statements held one receipt, because two connections were free most of the time at 2,400 receipts a second.
/// So, like PostgreSQL's own `commit_delay` (which waits only when other transactions are active), a batch waits only
/// while receipts keep coming:
///
/// - A receipt that finds no statement started in the last `linger` goes at once, alone or with whatever waits: a
///   quiet server adds no wait.
/// - Otherwise the receipts wait until `linger` after the last statement started, then go together: while receipts
///   come at rate r, a statement starts every `linger` with about r × `linger` of them (12 at 2,400 a second and 5 ms,
///   25 at 5,000). A receipt waits at most `linger`, and behind at most one statement running.
/// - `maxBatch` receipts waiting go at once, on a second connection if the first is busy (`lanes`): a burst is not
///   held to one statement every `linger`.
struct ReceiptGrouping: Sendable, Equatable {
    /// Statements running at once at most.
    var lanes: Int
    /// Receipts in one statement at most.
    var maxBatch: Int
    /// The least time between the starts of two statements that are not full.
    var linger: Duration

    /// The defaults of `paperboy serve`: two connections, 64 receipts a statement, 5 ms.
    static let standard = ReceiptGrouping(lanes: 2, maxBatch: 64, linger: .milliseconds(5))

    init(lanes: Int, maxBatch: Int, linger: Duration) {
        precondition(lanes > 0 && maxBatch > 0, "a batcher runs at least one statement of at least one receipt")
        precondition(linger >= .zero, "a linger is not negative")
        self.lanes = lanes
        self.maxBatch = maxBatch
        self.linger = linger
    }

    enum Decision<Instant: Equatable & Sendable>: Equatable, Sendable {
        /// Start a statement with this many of the receipts waiting (the oldest first).
        case start(Int)
        /// Nothing to start before this instant, unless a statement ends or more receipts come first.
        case wait(until: Instant)
        /// Nothing to start until a statement ends or more receipts come.
        case idle
    }

    /// What to do now, with `waiting` receipts waiting, `running` statements running, the last statement started at
    /// `lastStart` (nil: none yet).
    func next<Instant: InstantProtocol & Sendable>(waiting: Int, running: Int, lastStart: Instant?, now: Instant) -> Decision<Instant>
    where Instant.Duration == Duration {
        guard waiting > 0, running < lanes else { return .idle }
        if waiting >= maxBatch { return .start(maxBatch) }
        // A batch that is not full waits for the statement running: at most one of them at a time.
        guard running == 0 else { return .idle }
        guard let lastStart else { return .start(waiting) }
        let due = lastStart.advanced(by: linger)
        return now >= due ? .start(waiting) : .wait(until: due)
    }
}
