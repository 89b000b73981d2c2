import NIOCore

/// A request as the pool's decisions see it: its id (for withdrawing it), when it entered the pool (for the wait
/// limit), how often a connection gave it back unprocessed (for the resend limit), and whether its caller withdrew
/// it.
protocol PushPoolRequest: Sendable {
    associatedtype ID: Hashable & Sendable
    var id: ID { get }
    var enqueuedAt: NIODeadline { get }
    var resends: Int { get set }
    /// Its caller withdrew it: a connection that gives it back unwritten does not send it again.
    var isWithdrawn: Bool { get }
}

extension PushPoolRequest {
    var isWithdrawn: Bool { false }
}

extension PushWireRequest: PushPoolRequest {}

extension PushConnectionPool {
    /// The pool's decisions as a pure state machine: which connection takes a request, when to open a
    /// connection, how long to back off after failed connects, which waiting requests have waited too long,
    /// and what a shutdown ends. The pool feeds it events under its lock, with the time read once per
    /// event, and performs the ``Actions`` it returns; tests drive it with plain values and no sockets.
    ///
    /// It owns one timer, for the earliest of: the first waiting request's wait limit, the end of the
    /// connect backoff while requests wait for a connection, and a connection's handshake deadline. It asks
    /// for the timer only when that moment moves earlier; a timer that fires early or twice is harmless.
    ///
    /// - `Request`: what waits and is handed to connections (``PushWireRequest`` in the pool).
    /// - `Connection`: the handle the pool acts on (its handler and channel in the pool).
    struct StateMachine<Request: PushPoolRequest, Connection: Sendable>: Sendable {
        /// Requests handed to one connection, in order.
        struct Handover: Sendable {
            let connectionID: Int
            let connection: Connection
            var requests: [Request]
        }

        enum TimerAction: Sendable, Equatable {
            /// Arm the pool's timer for this moment, replacing the one armed.
            case schedule(NIODeadline)
            case cancel
        }

        /// What the pool does after an event, in this order: completes requests, hands requests to
        /// connections, closes and drains connections, opens one, sets its timer.
        struct Actions: Sendable {
            /// Requests that end here: not sent (waited too long, came back too often, shut down).
            var complete: [(request: Request, result: PushWireResult)] = []
            var enqueue: [Handover] = []
            /// Connections that did not finish TLS and HTTP/2 within the connect timeout.
            var close: [Connection] = []
            /// Connections to drain (finish their streams, take nothing new, close): the shutdown.
            var drain: [Connection] = []
            /// Connections that may hold withdrawn requests they have not written: they give those up.
            var withdraw: (ids: Set<Request.ID>, from: [Connection])?
            /// Open a connection with this id.
            var connect: Int?
            var timer: TimerAction?

            /// Hands `request` to a connection, with the requests already handed to it.
            mutating func hand(_ request: Request, to id: Int, _ connection: Connection) {
                if let index = enqueue.firstIndex(where: { $0.connectionID == id }) {
                    enqueue[index].requests.append(request)
                } else {
                    enqueue.append(Handover(connectionID: id, connection: connection, requests: [request]))
                }
            }
        }

        /// What follows a request's end on a connection. Its own case for the request that frees a stream
        /// and the next waiting request that takes it: the path of every request under load, which should
        /// not allocate.
        enum Finished: Sendable {
            case none
            /// The freed stream goes to this waiting request on the same connection.
            case handOver(Request, to: Connection)
            case actions(Actions)
        }

        private struct Entry: Sendable {
            let connection: Connection
            /// Requests handed to the connection and not yet finished.
            var assigned = 0
            var limit: Int
            var ready = false
            var draining = false
            /// When the server's first SETTINGS arrived.
            var readyAt: NIODeadline?
            /// While TCP is up and TLS and HTTP/2 are not: when the connection is given up.
            var handshakeDeadline: NIODeadline?
            /// Whether the server answered any request on it.
            var answered = false
            /// Its end (GOAWAY or close) was judged for the reconnect backoff.
            var ended = false
            /// Closed by the pool because TLS and HTTP/2 were not up within the connect timeout.
            var handshakeTimedOut = false
            /// While requests are outstanding on it: since when it has answered nothing (the later of its
            /// last answer and the moment it got work while idle). Nil while idle; kept when its last request
            /// ends unanswered while it is stalled (it is closed then).
            var silentSince: NIODeadline?
            /// Closed by the pool because it stalled and its requests ended unanswered.
            var closedAsStalled = false
        }

        /// A connection that ends this soon after becoming ready, before answering anything, counts as a
        /// failed connect for the reconnect backoff.
        static var shortLived: TimeAmount { .seconds(2) }

        let configuration: Configuration
        private var entries: [Int: Entry] = [:]
        private var nextConnectionID = 0
        /// Connections started and not yet ready (or failed).
        private var connecting: Set<Int> = []
        private var waiting = CircularBuffer<Request>()
        private var consecutiveFailures = 0
        /// Requests were answered not sent because the endpoint could not be reached
        /// (``Configuration/failWaitingWhileUnreachable``): the pool keeps trying to connect, backing off, though
        /// nothing waits, so that it sees the endpoint back (and stops being unreachable) before the sender sends again.
        private var probing = false
        private var noConnectBefore = NIODeadline.uptimeNanoseconds(0)
        private var lastConnectError: String?
        private(set) var isShutdown = false
        /// The moment the pool's timer is armed for.
        private var timerDeadline: NIODeadline?
        /// The time from a request's entry into the pool to its answer, smoothed (1/8 of each new sample, as
        /// TCP smooths round-trip times). Nil until the first answer.
        private(set) var smoothedAnswerTime: TimeAmount?

        init(configuration: Configuration) {
            self.configuration = configuration
        }

        // MARK: Questions

        /// True while the endpoint cannot be reached or does not answer: no ready connection takes requests,
        /// and either the last connection attempts failed or the connections are stalled.
        func isUnreachable(now: NIODeadline) -> Bool {
            if entries.values.contains(where: { takesRequests($0, now: now) }) { return false }
            return consecutiveFailures > 0 || entries.values.contains { isStalled($0, now: now) }
                || waiting.first.map { now - $0.enqueuedAt >= silenceLimit } ?? false
        }

        /// How long a connection with requests outstanding may answer nothing before it counts as stalled:
        /// four times the smoothed answer time, at least ``Configuration/stalledAfter``, at most the request
        /// timeout (then its requests time out anyway). Before the first answer, the request timeout: a slow
        /// endpoint is not taken for a stalled one.
        ///
        /// A stalled connection takes no new requests until it answers again. An endpoint that hangs (a
        /// paused process, a black-holed path) keeps connections open and accepts what is written, then
        /// processes it all at once when it is back; this bounds that backlog to about this long at the
        /// caller's rate, where without it the caller would keep writing until the request timeout.
        var silenceLimit: TimeAmount {
            guard let smoothedAnswerTime else { return configuration.timing.requestTimeout }
            return min(max(.nanoseconds(smoothedAnswerTime.nanoseconds * 4), configuration.stalledAfter), configuration.timing.requestTimeout)
        }

        /// Whether the connection may be given requests (streams aside): ready, not going away, not stalled.
        private func takesRequests(_ entry: Entry, now: NIODeadline) -> Bool {
            entry.ready && !entry.draining && !entry.closedAsStalled && !isStalled(entry, now: now)
        }

        /// Whether the connection is stalled: requests outstanding and no answer for ``silenceLimit``.
        private func isStalled(_ entry: Entry, now: NIODeadline) -> Bool {
            guard let silentSince = entry.silentSince else { return false }
            return now - silentSince >= silenceLimit
        }

        /// Requests handed to connections and not yet finished.
        var inFlight: Int { entries.values.reduce(0) { $0 + $1.assigned } }

        /// Requests waiting for a connection or a free stream.
        var waitingCount: Int { waiting.count }

        /// Whether a connection that ended (GOAWAY or closed) counts as a failed connect for the backoff: it
        /// never became ready, or it went away soon after without answering anything, as a server that sends
        /// SETTINGS and GOAWAY at once does. Reconnecting at once to such a server is a tight loop.
        static func endedAsFailure(readyAt: NIODeadline?, answered: Bool, endedAt: NIODeadline) -> Bool {
            guard let readyAt else { return true }
            return !answered && endedAt - readyAt < shortLived
        }

        /// The wait before the next connection attempt after `failures` failures in a row: doubling from the
        /// initial backoff to the maximum.
        func backoff(failures: Int) -> TimeAmount {
            let exponent = min(max(failures - 1, 0), 20)
            return min(configuration.reconnectInitialBackoff * Int64(1 << exponent), configuration.reconnectMaximumBackoff)
        }

        // MARK: Events from callers

        private var clientShutDown: PushTransportError {
            PushTransportError(.shutdown, "the \(configuration.service) client was shut down")
        }

        private var withdrawn: PushTransportError {
            PushTransportError(.cancelled, "the sender was cancelled before the request was written")
        }

        /// Requests to send: as many as there are free streams go to the open connections, the least busy
        /// first; the rest wait in FIFO order, and a connection opens for them if the pool may open one.
        mutating func submit(_ requests: [Request], now: NIODeadline) -> Actions {
            var actions = Actions()
            if isShutdown {
                actions.complete = requests.map { ($0, .notSent(clientShutDown)) }
                return actions
            }
            var index = requests.startIndex
            while index < requests.endIndex, let (id, entry) = freeConnection(now: now) {
                let take = min(entry.limit - entry.assigned, requests.endIndex - index)
                assign(take, to: id, now: now)
                actions.enqueue.append(Handover(connectionID: id, connection: entry.connection, requests: Array(requests[index..<(index + take)])))
                index += take
            }
            if index < requests.endIndex {
                waiting.append(contentsOf: requests[index...])
                startConnectionIfNeeded(now: now, &actions)
            }
            releaseWaitingIfUnreachable(now: now, &actions)
            armTimer(now: now, &actions)
            return actions
        }

        /// For a sender that paces its own sends (``Configuration/failWaitingWhileUnreachable``): while the endpoint
        /// cannot be reached (a connect failed, or a connection closed as one: not merely slow or stalled connections,
        /// whose requests still go out when they answer), every request waiting for a connection is answered not sent
        /// at once. Kept, they would all go out the moment the endpoint is back, on top of what the sender then sends
        /// at its pace (an APNs away for 10 s gave 180 pushes in a second against a plan of 100, `FaultTests`).
        private mutating func releaseWaitingIfUnreachable(now: NIODeadline, _ actions: inout Actions) {
            guard configuration.failWaitingWhileUnreachable, !waiting.isEmpty, consecutiveFailures > 0, isUnreachable(now: now) else { return }
            let error = PushTransportError(.connectFailed, "\(configuration.service) cannot be reached: \(whyNotSent())")
            while let request = waiting.popFirst() { actions.complete.append((request, .notSent(error))) }
            probing = true
        }

        /// Stops taking requests: the waiting ones fail as not sent, and every connection drains (its open
        /// streams finish, then it closes). Repeating it drains the connections still open again.
        mutating func shutdown() -> Actions {
            var actions = Actions()
            isShutdown = true
            while let request = waiting.popFirst() { actions.complete.append((request, .notSent(clientShutDown))) }
            actions.drain = entries.keys.sorted().map { entries[$0]!.connection }
            if timerDeadline != nil {
                timerDeadline = nil
                actions.timer = .cancel
            }
            return actions
        }

        /// The caller of requests `ids` withdrew them (its task was cancelled): those still waiting here end as not
        /// sent (`cancelled`), and every connection with requests assigned gives up those among `ids` it has not
        /// written yet. Requests already written stay: their answers, or their timeouts, still come. Ids the pool
        /// no longer has are ignored, so withdrawing twice is harmless.
        mutating func withdraw(_ ids: Set<Request.ID>) -> Actions {
            var actions = Actions()
            guard !ids.isEmpty else { return actions }
            if waiting.contains(where: { ids.contains($0.id) }) {
                var kept = CircularBuffer<Request>(initialCapacity: waiting.count)
                while let request = waiting.popFirst() {
                    if ids.contains(request.id) {
                        actions.complete.append((request, .notSent(withdrawn)))
                    } else {
                        kept.append(request)
                    }
                }
                waiting = kept
            }
            // The timer may now be armed for a request that is gone; a timer that fires early is harmless.
            let busy = entries.keys.sorted().compactMap { entries[$0]!.assigned > 0 ? entries[$0]!.connection : nil }
            if !busy.isEmpty { actions.withdraw = (ids, busy) }
            return actions
        }

        /// The pool's timer fired: fails the requests that waited too long, gives up on handshakes that did
        /// not finish in time, and opens a connection once the backoff is over.
        mutating func timerFired(now: NIODeadline) -> Actions {
            var actions = Actions()
            if let deadline = timerDeadline, deadline <= now { timerDeadline = nil }
            guard !isShutdown else { return actions }
            while let first = waiting.first, now - first.enqueuedAt >= configuration.maximumWait {
                waiting.removeFirst()
                actions.complete.append((first, .notSent(PushTransportError(.connectFailed, whyNotSent()))))
            }
            releaseWaitingIfUnreachable(now: now, &actions)
            for id in entries.keys.sorted() {
                guard let deadline = entries[id]!.handshakeDeadline, deadline <= now else { continue }
                entries[id]!.handshakeDeadline = nil
                entries[id]!.handshakeTimedOut = true
                actions.close.append(entries[id]!.connection)
            }
            startConnectionIfNeeded(now: now, &actions)
            armTimer(now: now, &actions)
            return actions
        }

        // MARK: Events from connections

        /// The channel of connection `id` exists (before TCP is up); it takes requests once ready.
        mutating func connectionCreated(_ id: Int, _ connection: Connection) {
            entries[id] = Entry(connection: connection, limit: min(configuration.initialStreamLimit, configuration.streamCap))
        }

        /// TCP is up; the connection takes requests once the server's SETTINGS arrive, and is closed if they
        /// do not arrive within the connect timeout: a server that accepts TCP and never finishes the TLS
        /// handshake would otherwise hold the pool's one connection attempt until TCP gives up, minutes later.
        mutating func connectionEstablished(_ id: Int, now: NIODeadline) -> Actions {
            var actions = Actions()
            guard let entry = entries[id], !entry.ready else { return actions }
            if isShutdown {
                actions.close.append(entry.connection)
                return actions
            }
            entries[id]!.handshakeDeadline = now + configuration.connectTimeout
            armTimer(now: now, &actions)
            return actions
        }

        /// The connection attempt failed (TCP, or the channel could not be set up): the next one waits for
        /// the backoff.
        mutating func connectFailed(_ id: Int, error: String, now: NIODeadline) -> Actions {
            var actions = Actions()
            connecting.remove(id)
            entries[id] = nil
            consecutiveFailures += 1
            lastConnectError = error
            noConnectBefore = now + backoff(failures: consecutiveFailures)
            releaseWaitingIfUnreachable(now: now, &actions)
            armTimer(now: now, &actions)
            return actions
        }

        /// The server's first SETTINGS arrived: the connection takes up to `streamLimit` requests.
        mutating func connectionReady(_ id: Int, streamLimit: Int, now: NIODeadline) -> Actions {
            var actions = Actions()
            connecting.remove(id)
            guard entries[id] != nil else { return actions }
            // The failure count stays until the connection answers or lasts (``recordEnd``): a server that
            // sends SETTINGS and then GOAWAY at once must not reset the backoff.
            lastConnectError = nil
            probing = false
            entries[id]!.readyAt = now
            entries[id]!.ready = true
            entries[id]!.handshakeDeadline = nil
            entries[id]!.limit = streamLimit
            if isShutdown {
                actions.drain.append(entries[id]!.connection)
                return actions
            }
            dispatchWaiting(now: now, &actions)
            armTimer(now: now, &actions)
            return actions
        }

        /// The server changed `SETTINGS_MAX_CONCURRENT_STREAMS`.
        mutating func streamLimitChanged(_ id: Int, to limit: Int, now: NIODeadline) -> Actions {
            var actions = Actions()
            entries[id]?.limit = limit
            dispatchWaiting(now: now, &actions)
            armTimer(now: now, &actions)
            return actions
        }

        /// A request on connection `id` ended with `result`. The pool completes it unless the result is
        /// `.resend`, which the state machine takes back: it waits again, ahead of newer requests, unless it
        /// came back too often.
        mutating func requestFinished(on id: Int, _ request: Request, result: PushWireResult, now: NIODeadline) -> Finished {
            if case .resend = result {
                var actions = Actions()
                release(1, from: id, now: now)
                requeue([request], &actions)
                dispatchWaiting(now: now, &actions)
                armTimer(now: now, &actions)
                return .actions(actions)
            }
            guard let entry = entries[id] else { return .none }
            if case .response = result {
                if !entry.answered {
                    // The connection works: connects after it start from the initial backoff again.
                    entries[id]!.answered = true
                    consecutiveFailures = 0
                }
                entries[id]!.silentSince = now
                let sample = now - request.enqueuedAt
                smoothedAnswerTime = smoothedAnswerTime.map { .nanoseconds($0.nanoseconds + (sample.nanoseconds - $0.nanoseconds) / 8) } ?? sample
            }
            // The freed stream goes straight to the next waiting request on this connection (`assigned`
            // still counts the finished one), unless the connection is stalled: a request that has waited
            // goes to a connection that answers.
            if !entry.draining, entry.assigned <= entry.limit, !isStalled(entries[id]!, now: now), let next = waiting.popFirst() {
                return .handOver(next, to: entry.connection)
            }
            release(1, from: id, now: now)
            if entries[id]!.assigned == 0, entries[id]!.silentSince != nil, !entries[id]!.closedAsStalled {
                // Stalled, and its last request ended unanswered (timed out): it would look idle and take
                // requests again, which a hung server only buffers. It is closed; the next connection is up
                // only once the server completes a handshake, and requests wait meanwhile (unreachable).
                entries[id]!.closedAsStalled = true
                var actions = Actions()
                actions.close.append(entry.connection)
                return .actions(actions)
            }
            return .none
        }

        /// The server sent GOAWAY: the connection takes nothing new; `resend`, the requests it did not
        /// process, wait again.
        mutating func connectionGoingAway(_ id: Int, resend: [Request], now: NIODeadline) -> Actions {
            var actions = Actions()
            recordEnd(of: id, now: now)
            entries[id]?.draining = true
            release(resend.count, from: id, now: now)
            requeue(resend, &actions)
            dispatchWaiting(now: now, &actions)
            armTimer(now: now, &actions)
            return actions
        }

        /// The connection closed; `resend`, the requests it never wrote, wait again. (The pool reports
        /// those whose fate is unknown.)
        mutating func connectionClosed(_ id: Int, resend: [Request], now: NIODeadline) -> Actions {
            var actions = Actions()
            // Closed before the server's SETTINGS, or right after without answering: as good as a failed connect.
            recordEnd(of: id, now: now)
            connecting.remove(id)
            entries[id] = nil
            requeue(resend, &actions)
            dispatchWaiting(now: now, &actions)
            releaseWaitingIfUnreachable(now: now, &actions)
            armTimer(now: now, &actions)
            return actions
        }

        // MARK: Choosing and opening connections

        /// The ready connection with a free stream and the fewest requests, stalled ones aside.
        private func freeConnection(now: NIODeadline) -> (Int, Entry)? {
            var best: (Int, Entry)?
            for (id, entry) in entries where entry.assigned < entry.limit && takesRequests(entry, now: now) {
                if best == nil || entry.assigned < best!.1.assigned || (entry.assigned == best!.1.assigned && id < best!.0) {
                    best = (id, entry)
                }
            }
            return best
        }

        /// Whether requests wait for a connection that the pool may open, the backoff aside.
        private var wantsConnection: Bool {
            guard !isShutdown, !waiting.isEmpty || probing, connecting.isEmpty else { return false }
            return entries.values.count(where: { !$0.draining }) < configuration.connections
        }

        private mutating func startConnectionIfNeeded(now: NIODeadline, _ actions: inout Actions) {
            guard actions.connect == nil, wantsConnection, now >= noConnectBefore else { return }
            nextConnectionID += 1
            connecting.insert(nextConnectionID)
            actions.connect = nextConnectionID
        }

        /// Hands waiting requests to connections with free streams, and opens a connection if they still wait.
        private mutating func dispatchWaiting(now: NIODeadline, _ actions: inout Actions) {
            while !waiting.isEmpty, let (id, entry) = freeConnection(now: now) {
                let request = waiting.removeFirst()
                assign(1, to: id, now: now)
                actions.hand(request, to: id, entry.connection)
            }
            startConnectionIfNeeded(now: now, &actions)
        }

        /// `count` more requests on connection `id`; an idle connection starts its silence now.
        private mutating func assign(_ count: Int, to id: Int, now: NIODeadline) {
            guard count > 0 else { return }
            if entries[id]!.assigned == 0 { entries[id]!.silentSince = now }
            entries[id]!.assigned += count
        }

        /// `count` requests fewer on connection `id`; an idle connection is not silent, unless it stalled.
        private mutating func release(_ count: Int, from id: Int, now: NIODeadline) {
            guard entries[id] != nil else { return }
            entries[id]!.assigned -= count
            if entries[id]!.assigned <= 0 && !isStalled(entries[id]!, now: now) { entries[id]!.silentSince = nil }
        }

        /// Requeues requests that a connection did not process, ahead of newer ones; gives up on one that
        /// keeps coming back.
        private mutating func requeue(_ requests: [Request], _ actions: inout Actions) {
            for var request in requests.reversed() {
                request.resends += 1
                if isShutdown {
                    actions.complete.append((request, .notSent(clientShutDown)))
                } else if request.isWithdrawn {
                    actions.complete.append((request, .notSent(withdrawn)))
                } else if request.resends > configuration.maximumResends {
                    let error = PushTransportError(
                        .connectionLost,
                        "\(configuration.service) did not process the request on \(request.resends) connections"
                    )
                    actions.complete.append((request, .notSent(error)))
                } else {
                    waiting.prepend(request)
                }
            }
        }

        /// Judges a connection's end once: a failure backs the next connect off; a connection that worked
        /// resets the failure count.
        private mutating func recordEnd(of id: Int, now: NIODeadline) {
            guard let entry = entries[id], !entry.ended else { return }
            entries[id]!.ended = true
            entries[id]!.handshakeDeadline = nil
            guard Self.endedAsFailure(readyAt: entry.readyAt, answered: entry.answered, endedAt: now) else {
                consecutiveFailures = 0
                return
            }
            connecting.remove(id)
            consecutiveFailures += 1
            if entry.handshakeTimedOut {
                lastConnectError = "no TLS and HTTP/2 handshake within \(configuration.connectTimeout.nanoseconds / 1_000_000) ms"
            } else if entry.ready {
                lastConnectError = "\(configuration.service) went away right after the connection was up, before answering anything"
            } else {
                lastConnectError = "the connection closed before HTTP/2 was up (TLS or protocol failure)"
            }
            noConnectBefore = now + backoff(failures: consecutiveFailures)
        }

        /// Why a request waited past the wait limit, as its caller reads it.
        private func whyNotSent() -> String {
            let waited = "\(configuration.maximumWait.nanoseconds / 1_000_000) ms"
            if let error = lastConnectError {
                return "no connection to \(configuration.endpoint): \(error)"
            } else if !entries.values.contains(where: \.ready) {
                return "no connection to \(configuration.endpoint) within \(waited) (still connecting)"
            } else {
                return "no free stream to \(configuration.endpoint) within \(waited)"
            }
        }

        // MARK: The timer

        /// Arms the timer if the next moment something is due moved earlier than the moment it is armed for.
        private mutating func armTimer(now: NIODeadline, _ actions: inout Actions) {
            guard !isShutdown else { return }
            var next: NIODeadline?
            func consider(_ deadline: NIODeadline) {
                if next.map({ deadline < $0 }) ?? true { next = deadline }
            }
            if now < noConnectBefore && wantsConnection { consider(noConnectBefore) }
            if let first = waiting.first {
                consider(first.enqueuedAt + configuration.maximumWait)
            }
            for entry in entries.values {
                if let deadline = entry.handshakeDeadline { consider(deadline) }
            }
            guard let next, timerDeadline.map({ next < $0 }) ?? true else { return }
            timerDeadline = next
            actions.timer = .schedule(next)
        }
    }
}
