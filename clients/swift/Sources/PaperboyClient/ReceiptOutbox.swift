import Foundation

/// The receipts a device still has to deliver, and when to try: pure rules, no I/O, every instant and every
/// jitter given by the caller. ``ReceiptCourier`` keeps one in a file and sends what ``due(at:)`` answers.
///
/// The rules (docs/app-integration.md, "The receipt outbox"):
/// 1. One receipt per edition. A success (`newData`, `noData`) replaces a `failed` one not yet sent; a
///    `failed` one never replaces a success; a repeat keeps the first (Paperboy keeps the first it stores too).
/// 2. Oldest first, one at a time; a receipt stored (200 or 201) leaves the outbox.
/// 3. 429: nothing is sent before `Retry-After` plus 1 to 2 seconds of jitter (the limit is the network
///    address's, so it holds for every receipt).
/// 4. 5xx, 409, no answer: nothing is sent for a growing delay, 30 s doubling to at most an hour, each
///    stretched by up to half again at random, so that a fleet coming back does not retry in step.
/// 5. 404 naming `token`: the device is not registered; everything waits for the next successful registration
///    (``registered()``), then goes at once, under the token registered.
/// 6. 401: nothing more until the app runs with another key (kept in memory only: a new app version starts clean).
/// 7. Any other 4xx (a 400, 413, or 404 naming the edition): the receipt is dropped; sending it again cannot help.
/// 8. A receipt older than 7 days (Paperboy's default ledger retention) is dropped; at most 64 are kept, the oldest
///    dropped first.
/// 9. On foregrounding (``dueOnForeground(at:)``) the failure backoff of rule 4 is lifted: the reader is here, and a
///    receipt held for up to an hour would make an edition that is on the phone count as missing at this open. A
///    429's pause, a 401 and an awaited registration still hold.
/// 10. The open report goes after the drain, and only when no success receipt of the last day still waits
///    (``openReport(at:)``): one that waits would count its edition as missing at this open. The report is then
///    dropped, never sent later (its time is what Paperboy learns).
public struct ReceiptOutbox: Codable, Sendable, Equatable {
    public struct Entry: Codable, Sendable, Equatable {
        public var receipt: ReceiptReport
        /// When the app handed it over.
        public var madeAt: Date
    }

    /// What became of a receipt handed to ``record(_:for:at:jitter:)``.
    public enum Verdict: Sendable, Equatable {
        case delivered
        case kept
        case dropped
    }

    public static let maximumAge: TimeInterval = 7 * 86_400
    public static let capacity = 64
    static let firstBackoff: TimeInterval = 30
    static let longestBackoff: TimeInterval = 3_600

    public private(set) var entries: [Entry] = []
    /// Nothing is sent before it (429, 5xx, no answer).
    public private(set) var pausedUntil: Date?
    /// Failures in a row (5xx, 409, no answer), for the next delay.
    public private(set) var failures = 0
    /// A 404 naming `token` was answered: waiting for a registration.
    public private(set) var awaitingRegistration = false
    /// A 401 was answered (not persisted: see rule 6).
    public internal(set) var unauthorized = false
    /// Nothing is sent before it, on foregrounding too: a 429's `Retry-After` (rule 3).
    public private(set) var rateLimitedUntil: Date?

    enum CodingKeys: String, CodingKey {
        case entries, pausedUntil, failures, awaitingRegistration, rateLimitedUntil
    }

    /// How far back a success receipt still bears on an open report (rule 10): an edition's broadcast lasts until its
    /// deadline, within a day.
    public static let openReportHorizon: TimeInterval = 86_400

    public init() {}

    /// Adds a receipt (rule 1).
    /// - Returns: false when the outbox holds a receipt for the edition that this one does not replace.
    @discardableResult
    public mutating func add(_ receipt: ReceiptReport, at now: Date) -> Bool {
        if let index = entries.firstIndex(where: { $0.receipt.editionID == receipt.editionID }) {
            guard !entries[index].receipt.result.isSuccess, receipt.result.isSuccess else { return false }
            entries[index] = Entry(receipt: receipt, madeAt: now)
            return true
        }
        entries.append(Entry(receipt: receipt, madeAt: now))
        if entries.count > Self.capacity { entries.removeFirst(entries.count - Self.capacity) }
        return true
    }

    /// The receipts to send now, oldest first: none while paused, unauthorized or awaiting a registration.
    /// Drops those older than ``maximumAge`` (rule 8).
    public mutating func due(at now: Date) -> [ReceiptReport] {
        entries.removeAll { now.timeIntervalSince($0.madeAt) > Self.maximumAge }
        guard !unauthorized, !awaitingRegistration else { return [] }
        if let pausedUntil, now < pausedUntil { return [] }
        return entries.map(\.receipt)
    }

    /// The receipts to send on foregrounding, oldest first (rule 9): as ``due(at:)``, the failure backoff lifted.
    public mutating func dueOnForeground(at now: Date) -> [ReceiptReport] {
        entries.removeAll { now.timeIntervalSince($0.madeAt) > Self.maximumAge }
        guard !unauthorized, !awaitingRegistration else { return [] }
        if let rateLimitedUntil, now < rateLimitedUntil { return [] }
        return entries.map(\.receipt)
    }

    /// When sending is next worth a try, for a request of background time: now when receipts are due, the pause's end
    /// when they wait for it; nil when there is nothing to send, or nothing time alone will let through (a 401, a
    /// registration awaited).
    public func nextAttempt(at now: Date) -> Date? {
        guard !entries.isEmpty, !unauthorized, !awaitingRegistration else { return nil }
        return max(now, pausedUntil ?? now)
    }

    /// Whether the open report may go after the drain (rule 10).
    public enum OpenReport: Sendable, Equatable {
        case send
        /// Dropped: success receipts of the last day still wait.
        case drop(waiting: Int)
    }

    /// What to do with the open report once the outbox has been drained (rule 10).
    public func openReport(at now: Date) -> OpenReport {
        let waiting = entries.filter { $0.receipt.result.isSuccess && now.timeIntervalSince($0.madeAt) <= Self.openReportHorizon }.count
        return waiting == 0 ? .send : .drop(waiting: waiting)
    }

    /// Records the answer to sending `receipt`: a status with the error's field and `Retry-After`, or nil for no
    /// answer. `jitter` is a number in 0..<1 (random in use, fixed in tests).
    public mutating func record(_ answer: Answer?, for receipt: ReceiptReport, at now: Date, jitter: Double) -> Verdict {
        let reaction = answer.map { APIReaction.to(status: $0.status, field: $0.field, retryAfter: $0.retryAfter) } ?? .retryLater
        switch reaction {
        case .done:
            remove(receipt)
            failures = 0
            pausedUntil = nil
            rateLimitedUntil = nil
            return .delivered
        case .drop:
            remove(receipt)
            return .dropped
        case .registerThenRetry:
            awaitingRegistration = true
            return .kept
        case .stopUntilNewKey:
            unauthorized = true
            return .kept
        case .retryAfter(let seconds):
            pausedUntil = now.addingTimeInterval(Double(seconds) + 1 + jitter)
            rateLimitedUntil = pausedUntil
            return .kept
        case .retryLater:
            let delay = min(Self.firstBackoff * pow(2, Double(min(failures, 16))), Self.longestBackoff)
            failures += 1
            pausedUntil = now.addingTimeInterval(delay * (1 + jitter / 2))
            return .kept
        }
    }

    /// The device registered (2xx): what waited for it goes now (rule 5).
    public mutating func registered() {
        awaitingRegistration = false
    }

    private mutating func remove(_ receipt: ReceiptReport) {
        // Only the receipt sent: a success added meanwhile for a `failed` one being sent stays.
        entries.removeAll { $0.receipt == receipt }
    }

    /// An answer of the API to a receipt.
    public struct Answer: Sendable, Equatable {
        public var status: Int
        public var field: String?
        public var retryAfter: Int?

        public init(status: Int, field: String? = nil, retryAfter: Int? = nil) {
            self.status = status
            self.field = field
            self.retryAfter = retryAfter
        }
    }
}
