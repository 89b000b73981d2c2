import PaperboyCore
import PushTransport

/// When a rejected or failed send is tried again: 429 `TooManyRequests` and the server's own failures
/// (500, 503) after an exponential backoff with jitter, bounded in attempts and in total time; everything
/// else (a bad token, topic or payload, an auth problem) never.
public struct APNsRetryPolicy: Sendable {
    /// The most sends of one notification, the first included.
    public var maximumAttempts: Int = 5
    /// The backoff before the second attempt; each later one doubles, up to ``maximumBackoff``.
    public var initialBackoff: Duration = .milliseconds(200)
    public var maximumBackoff: Duration = .seconds(10)
    /// No retry starts later than this after the first attempt.
    public var maximumTotal: Duration = .seconds(60)

    public init() {}

    /// One attempt: a busy or failing APNs is answered to the caller at once, for a sender that paces its own
    /// retries (a broadcast worker pauses the provider and sends again at its plan's rate; retried here, every
    /// request of an outage would go out together the moment APNs is back).
    public static var senderPaced: Self {
        var policy = Self()
        policy.maximumAttempts = 1
        return policy
    }

    /// What to do after `attempt` (1 for the first send) failed with `status` and `reason`, `elapsed`
    /// after the first attempt.
    ///
    /// - Parameter random: a number in `0..<1` for the jitter; injected so that tests are deterministic.
    public func decision(
        afterAttempt attempt: Int,
        status: Int,
        reason: APNsReason?,
        elapsed: Duration,
        random: Double
    ) -> Decision {
        guard Self.isRetryable(status: status, reason: reason) else { return .giveUp(.permanent) }
        guard attempt < maximumAttempts else { return .giveUp(.attemptsExhausted) }
        let delay = Duration.backoff(afterFailures: attempt, initial: initialBackoff, maximum: maximumBackoff, random: random)
        guard elapsed + delay <= maximumTotal else { return .giveUp(.timeExhausted) }
        return .retry(after: delay)
    }

    /// Whether a response may succeed if sent again later. A reason this build does not know is judged
    /// by its status.
    public static func isRetryable(status: Int, reason: APNsReason?) -> Bool {
        switch reason {
        case .some(.unknown), .none: status == 429 || status == 500 || status == 503
        case .some(let reason): reason.isRetryable
        }
    }

    /// The retries of one batch in waves by their own backoffs: ``PushRetryWave/waves(_:resolution:)``.
    public static func waves(_ retries: [(position: Int, delay: Duration)], resolution: Duration) -> [RetryWave] {
        PushRetryWave.waves(retries, resolution: resolution)
    }

    /// Retries of one batch that go out together.
    public typealias RetryWave = PushRetryWave

    public typealias Decision = PushRetryDecision
    public typealias GiveUpReason = PushRetryDecision.GiveUpReason
}
