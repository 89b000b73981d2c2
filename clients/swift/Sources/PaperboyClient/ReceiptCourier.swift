import Foundation

/// Delivers receipts: keeps each in the outbox file (``ReceiptOutboxFile``) until Paperboy has stored it, and
/// sends what the outbox's rules say is due (``ReceiptOutbox``). Hand it every receipt (``post(_:)``); tell it
/// about every successful registration (``registered(_:)``); call ``flush()`` when the app comes to the
/// foreground or gets background time.
///
/// The file's lock is held only to read and write it, never while a request is out: the app and its extension
/// may both send a receipt, which Paperboy then answers 200 with the one it stored. Within a process, one sending at a
/// time (``flush()``, ``deliver(_:budget:timer:)``, ``onForeground(seconds:timer:)``): an actor is reentrant at every
/// `await`, and a second flush started while the first one's request is out would post the same receipt again.
public actor ReceiptCourier {
    /// What became of a receipt that was sent.
    public struct Delivery: Sendable, Equatable {
        public var receipt: ReceiptReport
        public var verdict: ReceiptOutbox.Verdict
        /// The API's error, when it answered one (or none came).
        public var error: PaperboyAPIError?
    }

    let api: PaperboyAPIClient
    let file: ReceiptOutboxFile
    let now: @Sendable () -> Date
    let jitter: @Sendable () -> Double
    /// A 401 in this process: nothing more is sent until the app runs with another key (rule 6).
    private var unauthorized = false
    /// A sending (a flush, a wake's receipt, a foregrounding) is under way; the others wait their turn, in order.
    private var sending = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    /// Waits until no other sending is under way, then holds the turn until ``endSending()``.
    private func beginSending() async {
        if sending {
            await withCheckedContinuation { waiting.append($0) }  // the turn is handed over by endSending
        }
        sending = true
    }

    private func endSending() {
        if waiting.isEmpty {
            sending = false
        } else {
            waiting.removeFirst().resume()  // `sending` stays true: the turn passes to the oldest waiting
        }
    }

    public init(
        api: PaperboyAPIClient,
        file: ReceiptOutboxFile,
        now: @escaping @Sendable () -> Date = { Date() },
        jitter: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }
    ) {
        self.api = api
        self.file = file
        self.now = now
        self.jitter = jitter
    }

    /// After a successful registration (2xx) with `token`: receipts are posted under it from now on, and those
    /// that waited for a registration are sent.
    @discardableResult
    public func registered(_ token: PushToken) async throws -> [Delivery] {
        try file.update { contents in
            contents.token = token
            contents.outbox.registered()
        }
        return try await flush()
    }

    /// Keeps `receipt` in the outbox and sends what is due.
    @discardableResult
    public func post(_ receipt: ReceiptReport) async throws -> [Delivery] {
        let at = now()
        // False when the outbox holds a receipt for the edition that this one does not replace (rule 1): nothing to add.
        _ = try file.update { $0.outbox.add(receipt, at: at) }
        return try await flush()
    }

    /// Keeps `receipt` in the outbox and sends it alone, within the wake's `budget`: the receipt a wake-up owes
    /// before it answers the system. The backlog (other editions' receipts) waits for ``flush()`` (on foregrounding,
    /// in background refresh): sent one at a time here, it would spend the wake's seconds on old news. A receipt the
    /// outbox holds back (a 429's or a failure's pause, a 401, a registration awaited) is not sent now either.
    /// - Returns: what became of it; nil when it was not sent (held back, no token yet, no time left).
    @discardableResult
    public func deliver(_ receipt: ReceiptReport, budget: WakeBudget, timer: any WakeTimer) async throws -> Delivery? {
        let at = now()
        _ = try file.update { $0.outbox.add(receipt, at: at) }
        await beginSending()
        defer { endSending() }
        guard let (due, token) = try next(at: now(), editionID: receipt.editionID) else { return nil }
        let api = self.api
        return try await send(due) {
            do {
                _ = try await budget.spend(.receipt, timer: timer) { try await api.postReceipt(due, token: token) }
            } catch let exhausted as WakeBudget.Exhausted {
                // Cut at the wake's end: sent perhaps, answered not; the outbox sends it again later.
                throw PaperboyAPIError(status: nil, message: "\(exhausted)")
            }
        }
    }

    /// Sends the due receipts, oldest first, until one is not delivered.
    @discardableResult
    public func flush() async throws -> [Delivery] {
        await beginSending()
        defer { endSending() }
        var deliveries: [Delivery] = []
        while true {
            guard let (receipt, token) = try next(at: now(), editionID: nil) else { return deliveries }
            let api = self.api
            let delivery = try await send(receipt) { _ = try await api.postReceipt(receipt, token: token) }
            deliveries.append(delivery)
            if delivery.verdict == .kept { return deliveries }
        }
    }

    /// The oldest due receipt (of `editionID` only, when given; on foregrounding, the backoff lifted), with the token
    /// to post it under.
    private func next(at: Date, editionID: String?, foreground: Bool = false) throws -> (ReceiptReport, PushToken)? {
        let unauthorized = self.unauthorized
        return try file.update { contents in
            contents.outbox.unauthorized = unauthorized
            let due = foreground ? contents.outbox.dueOnForeground(at: at) : contents.outbox.due(at: at)
            guard let token = contents.token, let receipt = due.first(where: { editionID == nil || $0.editionID == editionID }) else { return nil }
            return (receipt, token)
        }
    }

    /// Posts `receipt` with `post` and records the answer in the outbox.
    private func send(_ receipt: ReceiptReport, _ post: () async throws -> Void) async throws -> Delivery {
        var answer: ReceiptOutbox.Answer?
        var failure: PaperboyAPIError?
        do {
            try await post()
            answer = ReceiptOutbox.Answer(status: 200)
        } catch {
            let error = PaperboyAPIError(error)
            failure = error
            answer = error.status.map { ReceiptOutbox.Answer(status: $0, field: error.field, retryAfter: error.retryAfter) }
        }
        let recordedAt = now()
        let random = jitter()
        let verdict = try file.update { $0.outbox.record(answer, for: receipt, at: recordedAt, jitter: random) }
        if failure?.reaction == .stopUntilNewKey { self.unauthorized = true }
        return Delivery(receipt: receipt, verdict: verdict, error: failure)
    }

    /// What became of a foregrounding: the receipts sent, and whether the open was reported.
    public struct Foregrounding: Sendable, Equatable {
        public var deliveries: [Delivery]
        public var openReported: Bool
    }

    /// When the app comes to the foreground (every time: the scene becomes active), in one ordered step: drains the
    /// outbox, its failure backoff lifted (``ReceiptOutbox/dueOnForeground(at:)``), within `seconds`; then reports
    /// the open (`POST /v1/devices/{token}/opens`, fire and forget) under the token registered last, unless a
    /// success receipt still waits (``ReceiptOutbox/openReport(at:)``): Paperboy's "ready at open" counts what its
    /// receipts say was on the phone when the report came.
    public func onForeground(seconds: TimeInterval = 10, timer: any WakeTimer = SystemWakeTimer()) async -> Foregrounding {
        let budget = WakeBudget(start: timer.now, seconds: seconds)
        await beginSending()
        defer { endSending() }
        var deliveries: [Delivery] = []
        let api = self.api
        while let (receipt, token) = try? next(at: now(), editionID: nil, foreground: true) {
            guard
                let delivery = try? await send(
                    receipt,
                    { _ = try await budget.spend(.receipt, timer: timer) { try await api.postReceipt(receipt, token: token) } }
                )
            else { break }
            deliveries.append(delivery)
            if delivery.verdict == .kept { break }
        }
        guard let contents = try? file.read(), let token = contents.token, contents.outbox.openReport(at: now()) == .send else {
            return Foregrounding(deliveries: deliveries, openReported: false)
        }
        let reported = (try? await api.reportOpen(token)) != nil
        return Foregrounding(deliveries: deliveries, openReported: reported)
    }

    /// When the receipts left in the outbox are next worth a try (``ReceiptOutbox/nextAttempt(at:)``); nil when none
    /// are, or none will get through by waiting.
    public func nextAttempt() -> Date? {
        let unauthorized = self.unauthorized
        guard var outbox = try? file.read().outbox else { return nil }
        outbox.unauthorized = unauthorized
        return outbox.nextAttempt(at: now())
    }

    /// The receipts not delivered yet, oldest first.
    public var pending: [ReceiptReport] {
        get throws { try file.read().outbox.entries.map(\.receipt) }
    }
}
