import Foundation

/// Delivers receipts: keeps each in the outbox file (``ReceiptOutboxFile``) until Paperboy has stored it, and
/// sends what the outbox's rules say is due (``ReceiptOutbox``). Hand it every receipt (``post(_:)``); tell it
/// about every successful registration (``registered(_:)``); call ``flush()`` when the app comes to the
/// foreground or gets background time.
///
/// The file's lock is held only to read and write it, never while a request is out: the app and its extension
/// may both send a receipt, which Paperboy then answers 200 with the one it stored.
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

    /// Sends the due receipts, oldest first, until one is not delivered.
    @discardableResult
    public func flush() async throws -> [Delivery] {
        var deliveries: [Delivery] = []
        while true {
            let at = now()
            let unauthorized = self.unauthorized
            let next: (ReceiptReport, PushToken)? = try file.update { contents in
                contents.outbox.unauthorized = unauthorized
                guard let token = contents.token, let receipt = contents.outbox.due(at: at).first else { return nil }
                return (receipt, token)
            }
            guard let (receipt, token) = next else { return deliveries }
            var answer: ReceiptOutbox.Answer?
            var failure: PaperboyAPIError?
            do {
                _ = try await api.postReceipt(receipt, token: token)
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
            deliveries.append(Delivery(receipt: receipt, verdict: verdict, error: failure))
            if verdict == .kept { return deliveries }
        }
    }

    /// What became of a foregrounding: the receipts sent, and whether the open was reported.
    public struct Foregrounding: Sendable, Equatable {
        public var deliveries: [Delivery]
        public var openReported: Bool
    }

    /// When the app comes to the foreground: sends what is due and reports the open (`POST /v1/devices/{token}/opens`,
    /// fire and forget) under the token registered last.
    public func onForeground() async -> Foregrounding {
        let token = try? file.read().token
        async let deliveries = try? flush()
        async let reported: Bool = {
            guard let token else { return false }
            return (try? await api.reportOpen(token)) != nil
        }()
        return Foregrounding(deliveries: await deliveries ?? [], openReported: await reported)
    }

    /// The receipts not delivered yet, oldest first.
    public var pending: [ReceiptReport] {
        get throws { try file.read().outbox.entries.map(\.receipt) }
    }
}
