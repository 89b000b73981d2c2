/// Which background session each edition's transfers use, and the receipt each owes: the bookkeeping of the iOS
/// glue's `URLSession`s (Platform/), generic over the session so that tests run it with a fake.
public struct EditionSessions<Session: AnyObject> {
    private var sessions: [String: Session] = [:]
    private var receiptsInFlight: Set<String> = []

    public init() {}

    /// What to do for a session of `identifier`.
    public enum Lookup {
        /// Use this one.
        case use(Session)
        /// Make one and ``add(_:identifier:)`` it.
        case create
    }

    public func lookup(_ identifier: String) -> Lookup {
        sessions[identifier].map { .use($0) } ?? .create
    }

    public mutating func add(_ session: Session, identifier: String) {
        sessions[identifier] = session
    }

    /// The session's one receipt: true for the first finish of `identifier`, false for the others.
    public mutating func claimReceipt(_ identifier: String, session: Session) -> Bool {
        receiptsInFlight.insert(identifier).inserted
    }

    /// The session was invalidated (after a failure, its other transfers cancelled).
    public mutating func invalidating(_ identifier: String, session: Session) {}

    /// The system says the session is gone (`didBecomeInvalidWithError`).
    public mutating func invalidated(_ identifier: String, session: Session) {}

    /// The system delivered all of the session's events (`urlSessionDidFinishEvents`).
    public mutating func eventsFinished(_ identifier: String) {
        receiptsInFlight.remove(identifier)
    }
}
