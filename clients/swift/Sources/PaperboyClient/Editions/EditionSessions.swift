/// Which background session each edition's transfers use, and the receipt each attempt owes: the bookkeeping of the
/// iOS glue's `URLSession`s (Platform/), pure and generic over the session so that tests run it with a stand-in.
///
/// The rules (`URLSession`'s, and the receipt's):
/// 1. One session per identifier (`<prefix>.<edition id>`), made once and reused while it lives.
/// 2. A session invalidated (after a failed transfer, its others cancelled) is never handed out again: a task made in
///    it raises an exception. Until the system says it is gone (`didBecomeInvalidWithError`) no other session of its
///    identifier may be made either: the caller waits, then makes a new one.
/// 3. One receipt per attempt: the first transfer of a session to finish the edition (its last bundle, or a failure)
///    claims it; its siblings' callbacks claim none, and neither does any callback of a session that is gone. A new
///    attempt (transfers started again in a live session, or a new session) owes its own: a receipt claimed earlier,
///    in the foreground, where iOS never delivers the events' end, holds nothing back.
public struct EditionSessions<Session: AnyObject> {
    private struct Entry {
        var session: Session
        var invalidating = false
        var receiptClaimed = false
    }

    private var entries: [String: Entry] = [:]

    public init() {}

    /// What to do for a session of an identifier.
    public enum Lookup {
        /// Use this one: it lives.
        case use(Session)
        /// Make one and ``add(_:identifier:)`` it.
        case create
        /// The identifier's session is being invalidated: make none until ``invalidated(_:session:)``.
        case wait
    }

    public func lookup(_ identifier: String) -> Lookup {
        guard let entry = entries[identifier] else { return .create }
        return entry.invalidating ? .wait : .use(entry.session)
    }

    public mutating func add(_ session: Session, identifier: String) {
        entries[identifier] = Entry(session: session)
    }

    /// Transfers were started in the identifier's session: a new attempt, which owes a receipt of its own.
    public mutating func attemptStarted(_ identifier: String) {
        entries[identifier]?.receiptClaimed = false
    }

    /// The attempt's one receipt: true for the first finish in the identifier's current, live session.
    public mutating func claimReceipt(_ identifier: String, session: Session) -> Bool {
        guard let entry = entries[identifier], entry.session === session, !entry.invalidating, !entry.receiptClaimed else { return false }
        entries[identifier]?.receiptClaimed = true
        return true
    }

    /// The session was invalidated (after a failure, its other transfers cancelled): handed out no more.
    public mutating func invalidating(_ identifier: String, session: Session) {
        guard entries[identifier]?.session === session else { return }
        entries[identifier]?.invalidating = true
    }

    /// The system says the session is gone (`didBecomeInvalidWithError`): a new one of its identifier may be made.
    public mutating func invalidated(_ identifier: String, session: Session) {
        guard entries[identifier]?.session === session else { return }
        entries[identifier] = nil
    }
}
