/// The project's send quota as a token bucket, as pure arithmetic on an injected time: `rate` messages per
/// second on average (600,000 a minute by default: 10,000/s), at most `burst` at once. FCM counts every
/// request against the quota, rejected ones too, so every attempt takes a token.
public struct FCMRateLimit: Sendable, Equatable {
    /// Messages per second.
    public let rate: Double
    /// The most messages sent at once after a quiet spell.
    public let burst: Double
    /// The theoretical time at which everything reserved so far has been sent at `rate` (GCRA's TAT).
    private var debtUntil: Duration

    /// - Parameters:
    ///   - perMinute: the project's quota (FCM's default is 600,000).
    ///   - burst: how many may go at once; one second's worth by default.
    public init(perMinute: Int, burst: Int? = nil) {
        rate = max(Double(perMinute), 1) / 60
        self.burst = Double(burst ?? max(1, perMinute / 60))
        debtUntil = .zero
    }

    /// Takes `count` tokens at `now` (time since any fixed origin) and says how long the caller waits before
    /// sending them. Waits are reserved in order: a second caller waits behind the first.
    public mutating func reserve(_ count: Int, now: Duration) -> Duration {
        let cost = Duration.seconds(Double(count) / rate)
        let window = Duration.seconds(burst / rate)
        // An idle bucket refills up to the burst, never beyond: its debt does not go below now.
        debtUntil = max(debtUntil, now) + cost
        return max(debtUntil - window - now, .zero)
    }
}
