import PaperboyClient
import Testing

/// Finding b (issue 50): the glue's background sessions, by the pure bookkeeping it keeps them with. A session here
/// is a stand-in object; the glue's is a `URLSession`, whose rules these are: a task made in an invalidated session
/// raises an Objective-C exception (the app crashes), and a session of an identifier may be made again only once the
/// previous one of that identifier is gone (`didBecomeInvalidWithError`).
@Suite("EditionSessions: the background sessions' bookkeeping")
struct EditionSessionsTests {
    final class Session {}

    static let identifier = "com.example.news.edition.0b4ed6a3-3c2e-4b8e-9a55-0d2f3f1b7c11"

    /// The session `lookup` hands out, if it hands one out.
    static func handedOut(_ lookup: EditionSessions<Session>.Lookup) -> Session? {
        if case .use(let session) = lookup { return session }
        return nil
    }

    static func creates(_ lookup: EditionSessions<Session>.Lookup) -> Bool {
        if case .create = lookup { return true }
        return false
    }

    @Test("a session invalidated after a failed download is never handed out again; the retry gets a new one once it is gone")
    func retryAfterAFailure() {
        var sessions = EditionSessions<Session>()
        let first = Session()
        #expect(Self.creates(sessions.lookup(Self.identifier)))
        sessions.add(first, identifier: Self.identifier)
        let claim1 = sessions.claimReceipt(Self.identifier, session: first)
        #expect(claim1)
        sessions.invalidating(Self.identifier, session: first)
        // The next push in the same process: a task in `first` would crash the app.
        #expect(Self.handedOut(sessions.lookup(Self.identifier)) !== first)
        #expect(!Self.creates(sessions.lookup(Self.identifier)), "not while the invalidated one of this identifier still exists")
        sessions.invalidated(Self.identifier, session: first)
        #expect(Self.creates(sessions.lookup(Self.identifier)))
    }

    @Test("a session finished in the foreground (no events to finish) does not hold back the next attempt's receipt")
    func foregroundFinishDoesNotBlock() {
        var sessions = EditionSessions<Session>()
        let first = Session()
        sessions.add(first, identifier: Self.identifier)
        let claim2 = sessions.claimReceipt(Self.identifier, session: first)
        #expect(claim2)
        sessions.invalidating(Self.identifier, session: first)
        sessions.invalidated(Self.identifier, session: first)
        // iOS never called urlSessionDidFinishEvents: the app was in the foreground. The next wave tries again.
        let second = Session()
        sessions.add(second, identifier: Self.identifier)
        let claim3 = sessions.claimReceipt(Self.identifier, session: second)
        #expect(claim3, "the retry's receipt")
    }

    @Test("one receipt per attempt: the cancelled transfers of a failed session claim none after the first")
    func oneReceiptPerAttempt() {
        var sessions = EditionSessions<Session>()
        let session = Session()
        sessions.add(session, identifier: Self.identifier)
        let claim4 = sessions.claimReceipt(Self.identifier, session: session)
        #expect(claim4)
        sessions.invalidating(Self.identifier, session: session)
        let claim5 = sessions.claimReceipt(Self.identifier, session: session)
        #expect(!claim5)
        sessions.invalidated(Self.identifier, session: session)
        let claim6 = sessions.claimReceipt(Self.identifier, session: session)
        #expect(!claim6, "a late callback of a session that is gone")
    }

    @Test("a live session that delivered its receipt is reused, and the next attempt in it owes a receipt of its own")
    func reusedSession() {
        var sessions = EditionSessions<Session>()
        let session = Session()
        sessions.add(session, identifier: Self.identifier)
        sessions.attemptStarted(Self.identifier)
        let first = sessions.claimReceipt(Self.identifier, session: session)
        #expect(first)
        #expect(Self.handedOut(sessions.lookup(Self.identifier)) === session)
        sessions.attemptStarted(Self.identifier)
        let next = sessions.claimReceipt(Self.identifier, session: session)
        #expect(next)
        let stranger = sessions.claimReceipt(Self.identifier, session: Session())
        #expect(!stranger, "a session that is not the identifier's current one")
    }
}
