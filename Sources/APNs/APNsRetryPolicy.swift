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
        // Full jitter: anywhere from half to all of the exponential step, so that many senders that
        // failed together do not retry together.
        let exponent = min(attempt - 1, 30)
        let step = min(initialBackoff * (1 << exponent), maximumBackoff)
        let delay = step * (0.5 + 0.5 * min(max(random, 0), 1))
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

    /// Orders the retries of one batch into waves by their own backoffs, so that a batch's retries spread
    /// out as their jitter says instead of all going out after the longest backoff among them; retries
    /// due within `resolution` of the first of a wave go out with it, as one batch.
    ///
    /// - Parameter retries: each retried delivery's position in its batch and its backoff.
    /// - Returns: the waves, soonest first; each waits for the longest backoff among its members (none
    ///   goes out early) and lists their positions in ascending order.
    public static func waves(_ retries: [(position: Int, delay: Duration)], resolution: Duration) -> [RetryWave] {
        var waves: [RetryWave] = []
        var firstDelay = Duration.zero
        for retry in retries.sorted(by: { ($0.delay, $0.position) < ($1.delay, $1.position) }) {
            if let last = waves.indices.last, retry.delay <= firstDelay + resolution {
                waves[last].delay = retry.delay
                waves[last].positions.append(retry.position)
            } else {
                firstDelay = retry.delay
                waves.append(RetryWave(delay: retry.delay, positions: [retry.position]))
            }
        }
        for index in waves.indices { waves[index].positions.sort() }
        return waves
    }

    /// Retries of one batch that go out together.
    public struct RetryWave: Equatable, Sendable {
        /// From the end of the attempt that failed.
        public var delay: Duration
        public var positions: [Int]

        public init(delay: Duration, positions: [Int]) {
            self.delay = delay
            self.positions = positions
        }
    }

    public enum Decision: Equatable, Sendable {
        case retry(after: Duration)
        case giveUp(GiveUpReason)
    }

    public enum GiveUpReason: Equatable, Sendable {
        /// The rejection says the notification, token or credentials are wrong: sending again cannot help.
        case permanent
        case attemptsExhausted
        case timeExhausted
    }
}
