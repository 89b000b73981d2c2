import PaperboyCore
import PushTransport

/// When a rejected message is sent again: 429 `QUOTA_EXCEEDED` after its `Retry-After` (60 s without one),
/// 500 `INTERNAL` and 503 `UNAVAILABLE` after their `Retry-After` or an exponential backoff with jitter
/// starting at 10 s (Firebase asks for at least that), bounded in attempts and in total time; 400, 401,
/// 403 and 404 never.
public struct FCMRetryPolicy: Sendable {
    /// The most sends of one message, the first included.
    public var maximumAttempts: Int = 5
    /// The backoff before the second attempt of a 500 or 503 without `Retry-After`; each later one doubles, up
    /// to ``maximumBackoff``.
    public var initialBackoff: Duration = .seconds(10)
    public var maximumBackoff: Duration = .seconds(120)
    /// A 429 without `Retry-After` waits this long.
    public var quotaBackoff: Duration = .seconds(60)
    /// No retry starts later than this after the first attempt.
    public var maximumTotal: Duration = .seconds(5 * 60)

    public init() {}

    /// One attempt: an FCM over quota or failing is answered to the caller at once, for a sender that paces its own
    /// retries (a broadcast worker pauses the provider and sends again at its plan's rate; retried here, every
    /// request of an outage would go out together the moment FCM is back).
    public static var senderPaced: Self {
        var policy = Self()
        policy.maximumAttempts = 1
        return policy
    }

    /// What to do after `attempt` (1 for the first send) was rejected, `elapsed` after the first attempt.
    ///
    /// - Parameter random: a number in `0..<1` for the jitter; injected so that tests are deterministic.
    public func decision(afterAttempt attempt: Int, rejection: FCMRejection, elapsed: Duration, random: Double) -> Decision {
        guard rejection.action == .retry, [429, 500, 503].contains(rejection.status) else { return .giveUp(.permanent) }
        guard attempt < maximumAttempts else { return .giveUp(.attemptsExhausted) }
        let jitter = min(max(random, 0), 1)
        let delay: Duration
        if let retryAfter = rejection.retryAfter, retryAfter > .zero {
            // Never sooner than asked; up to a tenth later, so that a batch told the same does not return at once.
            delay = retryAfter + retryAfter * (0.1 * jitter)
        } else if rejection.status == 429 {
            delay = quotaBackoff + quotaBackoff * (0.1 * jitter)
        } else {
            delay = .backoff(afterFailures: attempt, initial: initialBackoff, maximum: maximumBackoff, random: jitter)
        }
        guard elapsed + delay <= maximumTotal else { return .giveUp(.timeExhausted) }
        return .retry(after: delay)
    }

    public typealias Decision = PushRetryDecision
    public typealias GiveUpReason = PushRetryDecision.GiveUpReason
}
