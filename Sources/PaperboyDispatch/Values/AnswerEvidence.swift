import Foundation
import PaperboyCore

/// A recorded batch's answers through each provider, per ten seconds of sending, as the misconfiguration breaker's fleet-wide evidence keeps them
/// (`answer_tallies`, migration 0031; the simulation's model keeps the same): how many answers, how many said "not
/// valid for this app", how many came at or after the first of those, and the most frequent of those with what it
/// means. Counts what a worker's own guard counts: accepted and rejected answers (the provider answered about the
/// device), not those it never answered or called transient (those are not recorded).
public struct AnswerEvidence: Sendable, Equatable {
    public struct Counts: Sendable, Equatable {
        public var answers = 0
        public var invalid = 0
        /// Answers sent at or after the first "not valid" one of the batch (0 without one): in the ten seconds where a
        /// misconfiguration began, the answers accepted before it do not dilute the evidence of what came after.
        public var sinceInvalid = 0
        /// The most frequent "not valid" answer, as the provider spells it ("" without one), and its hint.
        public var reason = ""
        public var hint = ""
        /// When the latest accepted push of these answers was sent (nil: none was accepted): a "not valid" answer
        /// recorded before it was the token's, not the configuration's (``MisconfigurationGuard/appliedBefore(_:configuration:)``).
        public var lastAccepted: Date?

        public init(
            answers: Int = 0,
            invalid: Int = 0,
            sinceInvalid: Int = 0,
            reason: String = "",
            hint: String = "",
            lastAccepted: Date? = nil
        ) {
            self.answers = answers
            self.invalid = invalid
            self.sinceInvalid = sinceInvalid
            self.reason = reason
            self.hint = hint
            self.lastAccepted = lastAccepted
        }
    }

    /// The counts of each provider and ten seconds of sending (the answers' `sentAt`, seconds since 1970 a multiple of
    /// ten): the evidence is kept by when the pushes went out, so that a batch recorded late (a slow or restarting
    /// database, a worker stopped) adds its answers to when they were sent, not to when they were written.
    public private(set) var counts: [Key: Counts] = [:]

    public struct Key: Hashable, Sendable, Comparable {
        public var provider: PushProvider
        public var period: Int

        public static func < (lhs: Key, rhs: Key) -> Bool { (lhs.provider.rawValue, lhs.period) < (rhs.provider.rawValue, rhs.period) }
    }

    public var isEmpty: Bool { counts.isEmpty }

    /// The ten seconds `date` falls in, as seconds since 1970.
    public static func period(of date: Date) -> Int { Int((date.timeIntervalSince1970 / 10).rounded(.down)) * 10 }

    /// The evidence of `outcomes`.
    public init(_ outcomes: [BatchOutcome]) {
        var answered: [Key: [(at: Date, invalid: Bool)]] = [:]
        var reasons: [Key: [String: Int]] = [:]
        var hints: [Key: [String: String]] = [:]
        var lastAccepted: [Key: Date] = [:]
        for outcome in outcomes {
            let key = Key(provider: outcome.provider, period: Self.period(of: outcome.sentAt))
            switch outcome.result {
            case .accepted:
                answered[key, default: []].append((outcome.sentAt, false))
                lastAccepted[key] = max(lastAccepted[key] ?? outcome.sentAt, outcome.sentAt)
            case .rejected(let reason, let deactivation):
                let invalid = deactivation == .deferred
                answered[key, default: []].append((outcome.sentAt, invalid))
                if invalid {
                    reasons[key, default: [:]][reason, default: 0] += 1
                    if let hint = outcome.hint { hints[key, default: [:]][reason] = hint }
                }
            case .fateUnknown, .notSent, .skipped:
                break
            }
        }
        for (key, answers) in answered {
            var counts = Counts(answers: answers.count, invalid: answers.count(where: \.invalid))
            counts.lastAccepted = lastAccepted[key]
            if let first = answers.filter(\.invalid).map(\.at).min() { counts.sinceInvalid = answers.count { $0.at >= first } }
            if let top = reasons[key]?.max(by: { ($0.value, $1.key) < ($1.value, $0.key) })?.key {
                counts.reason = top
                counts.hint = hints[key]?[top] ?? ""
            }
            self.counts[key] = counts
        }
    }

    /// What a row that held `row` becomes with `counts` added (the statement's `ON CONFLICT` does the same): once the
    /// row has a "not valid" answer, every later answer counts as after it; the latest accepted push is the later of
    /// the two.
    public static func merged(_ row: Counts, _ counts: Counts) -> Counts {
        var merged = row
        merged.answers += counts.answers
        merged.sinceInvalid += row.invalid > 0 ? counts.answers : counts.sinceInvalid
        merged.invalid += counts.invalid
        merged.lastAccepted = [row.lastAccepted, counts.lastAccepted].compactMap { $0 }.max()
        if counts.invalid > 0 {
            merged.reason = counts.reason
            merged.hint = counts.hint
        }
        return merged
    }
}
