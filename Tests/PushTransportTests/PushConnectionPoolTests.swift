import NIOCore
import NIOHPACK
import Testing

@testable import PushTransport

/// The pool's decisions without sockets or clocks: events go in with a plain time, actions come out.
@Suite("Connection pool decisions")
struct PushConnectionPoolTests {
    struct Request: PushPoolRequest, Equatable {
        var name: String
        var enqueuedAt: NIODeadline
        var resends = 0
        var isWithdrawn = false

        var id: String { name }
    }

    typealias Machine = PushConnectionPool.StateMachine<Request, String>

    /// An arbitrary start, so that times before it are valid too.
    static let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000_000)

    static func at(_ milliseconds: Int64) -> NIODeadline { t0 + .milliseconds(milliseconds) }

    static func requests(_ names: String..., at time: NIODeadline = t0) -> [Request] {
        names.map { Request(name: $0, enqueuedAt: time) }
    }

    static func machine(connections: Int = 1, maximumResends: Int = 10, failWaitingWhileUnreachable: Bool = false) -> Machine {
        Machine(
            configuration: .init(
                service: "APNs",
                endpoint: PushEndpoint(host: "127.0.0.1", port: 2197, usesTLS: false),
                connections: connections,
                initialStreamLimit: 1,
                streamCap: 1000,
                connectTimeout: .seconds(10),
                maximumWait: .seconds(60),
                maximumResends: maximumResends,
                reconnectInitialBackoff: .milliseconds(100),
                reconnectMaximumBackoff: .milliseconds(400),
                stalledAfter: .milliseconds(500),
                failWaitingWhileUnreachable: failWaitingWhileUnreachable,
                timing: .init(requestTimeout: .seconds(10), pingInterval: .seconds(60), pingTimeout: .seconds(10))
            )
        )
    }

    /// Connection `id` (named "c`id`") through TCP and the server's SETTINGS.
    static func ready(_ machine: inout Machine, _ id: Int, limit: Int, at time: NIODeadline = t0) -> Machine.Actions {
        machine.connectionCreated(id, "c\(id)")
        _ = machine.connectionEstablished(id, now: time)
        return machine.connectionReady(id, streamLimit: limit, now: time)
    }

    /// The requests handed to connections, by connection name.
    static func handed(_ actions: Machine.Actions) -> [String: [String]] {
        var handed: [String: [String]] = [:]
        for handover in actions.enqueue { handed[handover.connection, default: []] += handover.requests.map(\.name) }
        return handed
    }

    static func notSent(_ actions: Machine.Actions) -> [String: PushTransportError] {
        var failed: [String: PushTransportError] = [:]
        for (request, result) in actions.complete {
            if case .notSent(let error) = result { failed[request.name] = error } else { Issue.record("\(request.name): \(result)") }
        }
        return failed
    }

    static let answered = PushWireResult.response(status: 200, headers: [:], body: nil)

    @Test("requests wait for the first connection, which opens once, and all go to it when it is ready")
    func firstConnection() {
        var machine = Self.machine()
        let first = machine.submit(Self.requests("a", "b", "c"), now: Self.t0)
        #expect(first.connect == 1)
        #expect(first.enqueue.isEmpty)
        #expect(first.timer == .schedule(Self.at(60_000)), "the wait limit of the first request")
        let second = machine.submit(Self.requests("d", at: Self.at(10)), now: Self.at(10))
        #expect(second.connect == nil, "one connection attempt at a time")
        #expect(second.timer == nil, "the timer is armed for an earlier moment already")
        machine.connectionCreated(1, "c1")
        #expect(machine.connectionEstablished(1, now: Self.at(20)).timer == .schedule(Self.at(10_020)), "the handshake deadline")
        let ready = machine.connectionReady(1, streamLimit: 10, now: Self.at(30))
        #expect(Self.handed(ready) == ["c1": ["a", "b", "c", "d"]])
        #expect(ready.connect == nil)
        #expect(machine.inFlight == 4)
        #expect(machine.waitingCount == 0)
    }

    /// A connection that answered `a`, then closed with `b` and `c` unprocessed, and a reconnect refused: what the pool
    /// does with `b` and `c`, and with `d` submitted after.
    static func endpointGoesAway(
        failWaitingWhileUnreachable: Bool
    ) -> (closed: Machine.Actions, refused: Machine.Actions, later: Machine.Actions, retry: Machine.Actions) {
        var machine = Self.machine(failWaitingWhileUnreachable: failWaitingWhileUnreachable)
        _ = Self.ready(&machine, 1, limit: 2)
        _ = machine.submit(Self.requests("a"), now: Self.t0)
        _ = machine.requestFinished(on: 1, Self.requests("a")[0], result: Self.answered, now: Self.at(5))
        _ = machine.submit(Self.requests("b", "c", at: Self.at(10)), now: Self.at(10))
        let closed = machine.connectionClosed(1, resend: Self.requests("b", "c", at: Self.at(10)), now: Self.at(20))
        let refused = machine.connectFailed(closed.connect ?? 2, error: "connection refused", now: Self.at(21))
        let later = machine.submit(Self.requests("d", at: Self.at(30)), now: Self.at(30))
        let retry = machine.timerFired(now: Self.at(2_000))
        return (closed, refused, later, retry)
    }

    @Test(
        "for a sender that paces itself: what waits when the endpoint turns unreachable (a refused reconnect) is answered not sent at once, and so is what comes while it is"
    )
    func waitingFailsWhileUnreachable() {
        let (closed, refused, later, retry) = Self.endpointGoesAway(failWaitingWhileUnreachable: true)
        #expect(closed.complete.isEmpty, "a connection that worked closed: not unreachable yet")
        #expect(closed.connect != nil, "a new connection for what waits")
        #expect(Set(Self.notSent(refused).keys) == ["b", "c"], "nothing waits to go out all at once when the endpoint is back")
        #expect(refused.timer != nil, "the next connect attempt after the backoff")
        #expect(Set(Self.notSent(later).keys) == ["d"])
        #expect(retry.connect != nil, "nothing waits, yet the pool tries again: it must see the endpoint back before the sender sends")
    }

    @Test("a sender that does not pace itself (paperboy push): what waits while the endpoint is unreachable waits for it, up to the wait limit")
    func waitingWaitsByDefault() {
        let (closed, refused, later, _) = Self.endpointGoesAway(failWaitingWhileUnreachable: false)
        #expect(closed.complete.isEmpty && refused.complete.isEmpty && later.complete.isEmpty)
    }

    @Test("a finished request's stream goes to the next waiting request on the same connection; an idle connection is reused")
    func reuse() {
        var machine = Self.machine()
        _ = machine.submit(Self.requests("a", "b"), now: Self.t0)
        #expect(Self.handed(Self.ready(&machine, 1, limit: 1)) == ["c1": ["a"]])
        guard case .handOver(let next, let connection) = machine.requestFinished(on: 1, Self.requests("a")[0], result: Self.answered, now: Self.at(5))
        else {
            Issue.record("b was not handed over")
            return
        }
        #expect(next.name == "b")
        #expect(connection == "c1")
        guard case .none = machine.requestFinished(on: 1, next, result: Self.answered, now: Self.at(6)) else {
            Issue.record("nothing waits")
            return
        }
        #expect(machine.inFlight == 0)
        let later = machine.submit(Self.requests("c", at: Self.at(7)), now: Self.at(7))
        #expect(Self.handed(later) == ["c1": ["c"]])
        #expect(later.connect == nil)
        #expect(later.timer == nil)
    }

    @Test("connections open one at a time up to the limit; requests go to the least busy connection")
    func upToTheLimit() {
        var machine = Self.machine(connections: 2)
        #expect(machine.submit(Self.requests("a", "b", "c"), now: Self.t0).connect == 1)
        let first = Self.ready(&machine, 1, limit: 2)
        #expect(Self.handed(first) == ["c1": ["a", "b"]])
        #expect(first.connect == 2, "c still waits: a second connection opens")
        let second = Self.ready(&machine, 2, limit: 2)
        #expect(Self.handed(second) == ["c2": ["c"]])
        let more = machine.submit(Self.requests("d", "e", at: Self.at(1)), now: Self.at(1))
        #expect(Self.handed(more) == ["c2": ["d"]], "c2 has a free stream, c1 none")
        #expect(more.connect == nil, "two connections is the limit: e waits for a stream")
        #expect(machine.waitingCount == 1)
        guard case .handOver(let next, "c1") = machine.requestFinished(on: 1, Self.requests("a")[0], result: Self.answered, now: Self.at(2)) else {
            Issue.record("e did not take a's stream")
            return
        }
        #expect(next.name == "e")
    }

    @Test("failed connects back off, doubling to the maximum; the timer starts the next attempt; an answer resets it")
    func backoff() {
        var machine = Self.machine()
        #expect(machine.submit(Self.requests("a"), now: Self.t0).connect == 1)
        #expect(machine.connectFailed(1, error: "connection refused", now: Self.t0).timer == .schedule(Self.at(100)))
        #expect(machine.isUnreachable(now: Self.t0))
        #expect(machine.submit(Self.requests("b", at: Self.at(50)), now: Self.at(50)).connect == nil, "within the backoff")
        #expect(machine.timerFired(now: Self.at(100)).connect == 2)
        #expect(machine.connectFailed(2, error: "connection refused", now: Self.at(100)).timer == .schedule(Self.at(300)))
        #expect(machine.timerFired(now: Self.at(300)).connect == 3)
        #expect(machine.connectFailed(3, error: "connection refused", now: Self.at(300)).timer == .schedule(Self.at(700)))
        #expect(machine.timerFired(now: Self.at(700)).connect == 4)
        #expect(machine.connectFailed(4, error: "connection refused", now: Self.at(700)).timer == .schedule(Self.at(1_100)), "400 ms is the maximum")
        #expect(machine.timerFired(now: Self.at(1_100)).connect == 5)
        #expect(Self.handed(Self.ready(&machine, 5, limit: 10, at: Self.at(1_200))) == ["c5": ["a", "b"]])
        #expect(!machine.isUnreachable(now: Self.at(1_200)))
        _ = machine.requestFinished(on: 5, Self.requests("a")[0], result: Self.answered, now: Self.at(1_300))
        _ = machine.connectionClosed(5, resend: [], now: Self.at(5_000))
        #expect(machine.submit(Self.requests("c", at: Self.at(5_000)), now: Self.at(5_000)).connect == 6, "a connection that worked: no backoff")
        #expect(machine.connectFailed(6, error: "connection refused", now: Self.at(5_000)).timer == .schedule(Self.at(5_100)), "from the start again")
    }

    @Test("a connection closed within 2 s of SETTINGS without answering counts as a failed connect")
    func shortLivedIsAFailure() {
        var machine = Self.machine()
        _ = machine.submit(Self.requests("a"), now: Self.t0)
        _ = Self.ready(&machine, 1, limit: 10)
        // SETTINGS and GOAWAY at once: the request comes back unprocessed and nothing was answered.
        let away = machine.connectionGoingAway(1, resend: Self.requests("a"), now: Self.at(5))
        #expect(away.connect == nil, "backing off")
        #expect(away.timer == .schedule(Self.at(105)))
        #expect(machine.isUnreachable(now: Self.at(5)))
        _ = machine.connectionClosed(1, resend: [], now: Self.at(6))
        #expect(machine.timerFired(now: Self.at(105)).connect == 2)
        _ = Self.ready(&machine, 2, limit: 10, at: Self.at(110))
        let again = machine.connectionClosed(2, resend: Self.requests("a"), now: Self.at(1_900))
        #expect(again.timer == .schedule(Self.at(2_100)), "the second failure in a row: 200 ms, SETTINGS did not reset the count")

        #expect(Machine.endedAsFailure(readyAt: nil, answered: false, endedAt: Self.t0))
        #expect(Machine.endedAsFailure(readyAt: Self.at(-5), answered: false, endedAt: Self.t0), "SETTINGS then GOAWAY")
        #expect(!Machine.endedAsFailure(readyAt: Self.at(-5), answered: true, endedAt: Self.t0), "it answered")
        #expect(!Machine.endedAsFailure(readyAt: Self.at(-2_000), answered: false, endedAt: Self.t0), "it lasted 2 s")
    }

    @Test("a connection that lasted and then closed is replaced at once")
    func lastingConnectionIsReplaced() {
        var machine = Self.machine()
        _ = machine.submit(Self.requests("a"), now: Self.t0)
        _ = Self.ready(&machine, 1, limit: 1)
        _ = machine.submit(Self.requests("b"), now: Self.at(2_500))
        let closed = machine.connectionClosed(1, resend: Self.requests("a"), now: Self.at(3_000))
        #expect(closed.connect == 2)
        #expect(!machine.isUnreachable(now: Self.at(3_000)))
        #expect(Self.handed(Self.ready(&machine, 2, limit: 10, at: Self.at(3_100))) == ["c2": ["a", "b"]], "the unwritten request first")
    }

    @Test("waiting requests fail as not sent at the wait limit, oldest first, saying why")
    func waitLimit() {
        var machine = Self.machine()
        _ = machine.submit(Self.requests("a"), now: Self.t0)
        _ = machine.submit(Self.requests("b", at: Self.at(30_000)), now: Self.at(30_000))
        let first = machine.timerFired(now: Self.at(60_000))
        let failed = Self.notSent(first)
        #expect(Array(failed.keys) == ["a"])
        #expect(failed["a"]?.code == .connectFailed)
        #expect(failed["a"]?.message == "no connection to http://127.0.0.1:2197 within 60000 ms (still connecting)")
        #expect(first.timer == .schedule(Self.at(90_000)), "b's wait limit")
        #expect(machine.waitingCount == 1)

        _ = machine.connectFailed(1, error: "connection refused", now: Self.at(60_000))
        let second = machine.timerFired(now: Self.at(90_000))
        #expect(Self.notSent(second)["b"]?.message == "no connection to http://127.0.0.1:2197: connection refused")
        #expect(second.connect == nil, "nothing waits: no connection is opened")
        #expect(second.timer == nil)
    }

    @Test("requests that wait for a stream on a busy connection fail at the wait limit too")
    func waitLimitBusy() {
        var machine = Self.machine()
        _ = machine.submit(Self.requests("a"), now: Self.t0)
        _ = Self.ready(&machine, 1, limit: 1)
        _ = machine.submit(Self.requests("b", at: Self.at(10)), now: Self.at(10))
        #expect(machine.timerFired(now: Self.at(60_009)).complete.isEmpty, "not yet")
        #expect(Self.notSent(machine.timerFired(now: Self.at(60_010)))["b"]?.message == "no free stream to http://127.0.0.1:2197 within 60000 ms")
    }

    @Test("a connection without TLS and HTTP/2 within the connect timeout is closed, and counts as a failed connect")
    func handshakeTimeout() {
        var machine = Self.machine()
        #expect(machine.submit(Self.requests("a"), now: Self.t0).connect == 1)
        machine.connectionCreated(1, "c1")
        #expect(machine.connectionEstablished(1, now: Self.at(100)).timer == .schedule(Self.at(10_100)))
        #expect(machine.timerFired(now: Self.at(10_099)).close.isEmpty)
        #expect(machine.timerFired(now: Self.at(10_100)).close == ["c1"])
        let closed = machine.connectionClosed(1, resend: [], now: Self.at(10_101))
        #expect(closed.connect == nil)
        #expect(closed.timer == .schedule(Self.at(10_201)))
        #expect(machine.timerFired(now: Self.at(10_201)).connect == 2)
        let failed = Self.notSent(machine.timerFired(now: Self.at(60_000)))
        #expect(failed["a"]?.message == "no connection to http://127.0.0.1:2197: no TLS and HTTP/2 handshake within 10000 ms")
    }

    @Test("requests a connection gave back go out again ahead of newer ones, until they came back too often")
    func resends() {
        var machine = Self.machine(maximumResends: 2)
        _ = machine.submit(Self.requests("a", "b"), now: Self.t0)
        _ = Self.ready(&machine, 1, limit: 1)
        var a = Self.requests("a")[0]
        for resends in 1...2 {
            guard case .actions(let actions) = machine.requestFinished(on: 1, a, result: .resend, now: Self.at(1)) else {
                Issue.record("no actions")
                return
            }
            #expect(actions.complete.isEmpty)
            #expect(actions.enqueue.count == 1)
            a = actions.enqueue[0].requests[0]
            #expect(a.name == "a", "ahead of b")
            #expect(a.resends == resends)
        }
        guard case .actions(let last) = machine.requestFinished(on: 1, a, result: .resend, now: Self.at(2)) else {
            Issue.record("no actions")
            return
        }
        #expect(Self.notSent(last)["a"]?.message == "APNs did not process the request on 3 connections")
        #expect(Self.handed(last) == ["c1": ["b"]])
    }

    @Test("GOAWAY: the connection takes nothing new, its unprocessed requests go to another, and a replacement opens")
    func goAway() {
        var machine = Self.machine(connections: 2)
        _ = machine.submit(Self.requests("a", "b", "c"), now: Self.t0)
        _ = Self.ready(&machine, 1, limit: 2)
        _ = Self.ready(&machine, 2, limit: 2)
        // Answers take about 3 s here, so that c, unanswered on c2, is not yet a stall (``stall()``).
        _ = machine.requestFinished(on: 1, Self.requests("a")[0], result: Self.answered, now: Self.at(2_900))
        let away = machine.connectionGoingAway(1, resend: Self.requests("b"), now: Self.at(3_000))
        #expect(Self.handed(away) == ["c2": ["b"]])
        #expect(away.connect == nil, "nothing waits")
        #expect(!machine.isUnreachable(now: Self.at(3_000)), "c1 answered and lasted")
        let more = machine.submit(Self.requests("d", "e", at: Self.at(3_001)), now: Self.at(3_001))
        #expect(Self.handed(more).isEmpty, "c2 is full, c1 draining")
        #expect(more.connect == 3, "a draining connection does not count against the limit")
    }

    // MARK: Stalls (an endpoint that keeps connections open and answers nothing)

    static let timedOut = PushWireResult.fateUnknown(PushTransportError(.timedOut, "no answer within 10000 ms"))

    @Test("the silence limit: the request timeout before any answer, then 4 × the smoothed answer time, at least stalledAfter")
    func silenceLimit() {
        var machine = Self.machine()
        #expect(machine.silenceLimit == .seconds(10), "no answer yet: a slow endpoint is not taken for a hung one")
        _ = machine.submit(Self.requests("a", "b", "c"), now: Self.t0)
        _ = Self.ready(&machine, 1, limit: 10)
        _ = machine.requestFinished(on: 1, Self.requests("a")[0], result: Self.answered, now: Self.at(20))
        #expect(machine.smoothedAnswerTime == .milliseconds(20))
        #expect(machine.silenceLimit == .milliseconds(500), "4 × 20 ms is below the floor")
        _ = machine.requestFinished(on: 1, Self.requests("b")[0], result: Self.answered, now: Self.at(1_620))
        #expect(machine.smoothedAnswerTime == .milliseconds(220), "20 + (1620 - 20) / 8")
        #expect(machine.silenceLimit == .milliseconds(880))
        _ = machine.requestFinished(on: 1, Self.requests("c")[0], result: Self.timedOut, now: Self.at(10_000))
        #expect(machine.smoothedAnswerTime == .milliseconds(220), "a request that timed out is no answer time")
    }

    @Test(
        "a connection with requests outstanding and no answer for the silence limit stalls: it takes nothing new, the pool is unreachable, and its answer ends it"
    )
    func stall() {
        var machine = Self.machine(connections: 1)
        _ = machine.submit(Self.requests("a"), now: Self.t0)
        _ = Self.ready(&machine, 1, limit: 100)
        _ = machine.requestFinished(on: 1, Self.requests("a")[0], result: Self.answered, now: Self.at(10))
        #expect(machine.silenceLimit == .milliseconds(500))
        #expect(!machine.isUnreachable(now: Self.at(5_000)), "an idle connection is not silent, however long")

        #expect(Self.handed(machine.submit(Self.requests("b", at: Self.at(5_000)), now: Self.at(5_000))) == ["c1": ["b"]])
        #expect(!machine.isUnreachable(now: Self.at(5_499)))
        #expect(machine.isUnreachable(now: Self.at(5_500)), "b unanswered for 500 ms")
        let held = machine.submit(Self.requests("c", at: Self.at(5_600)), now: Self.at(5_600))
        #expect(held.enqueue.isEmpty, "a stalled connection takes no new request")
        #expect(held.connect == nil, "one connection is the limit")
        #expect(machine.waitingCount == 1)

        guard case .handOver(let next, "c1") = machine.requestFinished(on: 1, Self.requests("b")[0], result: Self.answered, now: Self.at(8_000))
        else {
            Issue.record("the answering connection did not take c")
            return
        }
        #expect(next.name == "c")
        #expect(!machine.isUnreachable(now: Self.at(8_000)), "it answered: no longer stalled")
    }

    @Test(
        "a stalled connection whose last request ends unanswered is closed; requests then waiting longer than the silence limit keep the pool unreachable"
    )
    func stalledConnectionClosed() {
        var machine = Self.machine(connections: 1)
        _ = machine.submit(Self.requests("a"), now: Self.t0)
        _ = Self.ready(&machine, 1, limit: 100)
        _ = machine.requestFinished(on: 1, Self.requests("a")[0], result: Self.answered, now: Self.at(10))
        _ = machine.submit(Self.requests("b", at: Self.at(1_000)), now: Self.at(1_000))
        guard case .actions(let actions) = machine.requestFinished(on: 1, Self.requests("b")[0], result: Self.timedOut, now: Self.at(11_000))
        else {
            Issue.record("the stalled connection was not closed")
            return
        }
        #expect(actions.close == ["c1"])
        #expect(machine.isUnreachable(now: Self.at(11_000)), "idle, but it never answered b: still stalled until it closes")
        let waiting = machine.submit(Self.requests("c", at: Self.at(11_001)), now: Self.at(11_001))
        #expect(waiting.enqueue.isEmpty, "not to the connection being closed")
        _ = machine.connectionClosed(1, resend: [], now: Self.at(11_002))
        #expect(!machine.isUnreachable(now: Self.at(11_002)), "c has just begun to wait")
        #expect(machine.isUnreachable(now: Self.at(11_501)), "c waited 500 ms with no connection up: a hung server's handshake")
        _ = machine.timerFired(now: Self.at(11_600))
        let up = Self.ready(&machine, 2, limit: 100, at: Self.at(12_000))
        #expect(Self.handed(up) == ["c2": ["c"]])
        #expect(!machine.isUnreachable(now: Self.at(12_000)))
    }

    @Test("shutdown fails the waiting requests, drains every connection, and fails what comes after at once")
    func shutdown() {
        var machine = Self.machine()
        _ = machine.submit(Self.requests("a", "b"), now: Self.t0)
        _ = Self.ready(&machine, 1, limit: 1)
        let actions = machine.shutdown()
        #expect(Self.notSent(actions)["b"]?.code == .shutdown)
        #expect(actions.drain == ["c1"])
        #expect(actions.timer == .cancel)
        #expect(Self.notSent(machine.submit(Self.requests("c"), now: Self.at(1)))["c"]?.code == .shutdown)
        guard case .actions(let resent) = machine.requestFinished(on: 1, Self.requests("a")[0], result: .resend, now: Self.at(2)) else {
            Issue.record("no actions")
            return
        }
        #expect(Self.notSent(resent)["a"]?.code == .shutdown, "a request given back after shutdown is not sent again")
        #expect(resent.connect == nil)
        #expect(machine.timerFired(now: Self.at(60_000)).complete.isEmpty)
        machine.connectionCreated(2, "c2")
        #expect(machine.connectionEstablished(2, now: Self.at(3)).close == ["c2"], "a connection that comes up after shutdown is closed")
    }

    // MARK: Withdrawing (the sender's task was cancelled)

    @Test("withdrawn requests still waiting end as not sent (cancelled); others wait on; busy connections are asked to give theirs up")
    func withdraw() {
        var machine = Self.machine(connections: 2)
        _ = machine.submit(Self.requests("a", "b", "c", "d", "e"), now: Self.t0)
        _ = Self.ready(&machine, 1, limit: 2)
        #expect(machine.waitingCount == 3, "c, d and e wait for a stream")
        let actions = machine.withdraw(["b", "c", "e", "gone"])
        let failed = Self.notSent(actions)
        #expect(Set(failed.keys) == ["c", "e"], "b was handed to c1: the connection decides whether it was written")
        #expect(failed.values.allSatisfy { $0.code == .cancelled })
        #expect(actions.withdraw?.ids == ["b", "c", "e", "gone"])
        #expect(actions.withdraw?.from == ["c1"], "c1 holds a and b; connection 2 is still connecting")
        #expect(actions.enqueue.isEmpty && actions.connect == nil)
        #expect(machine.waitingCount == 1)
        guard case .handOver(let next, "c1") = machine.requestFinished(on: 1, Self.requests("a")[0], result: Self.answered, now: Self.at(5))
        else {
            Issue.record("d did not take a's stream")
            return
        }
        #expect(next.name == "d", "what was not withdrawn keeps its place")
        #expect(machine.withdraw([]).withdraw == nil)
        #expect(Self.notSent(machine.withdraw(["c", "e"])).isEmpty, "withdrawing twice is harmless")
    }

    @Test("a withdrawn request that a connection gives back unwritten (GOAWAY, closed) is not sent again")
    func withdrawnNotResent() {
        var machine = Self.machine(connections: 2)
        _ = machine.submit(Self.requests("a", "b"), now: Self.t0)
        _ = Self.ready(&machine, 1, limit: 2)
        var a = Self.requests("a")[0]
        a.isWithdrawn = true
        let away = machine.connectionGoingAway(1, resend: [a] + Self.requests("b"), now: Self.at(3_000))
        #expect(Self.notSent(away)["a"]?.code == .cancelled)
        #expect(away.complete.count == 1, "b waits for another connection")
        #expect(machine.waitingCount == 1)
    }
}
