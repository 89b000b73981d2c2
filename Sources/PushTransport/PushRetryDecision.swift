/// What a provider's retry policy decides after a rejection: send it again after a delay, or give up, and why.
public enum PushRetryDecision: Equatable, Sendable {
    case retry(after: Duration)
    case giveUp(GiveUpReason)

    public enum GiveUpReason: Equatable, Sendable {
        /// The answer says the message, the token or our credentials are wrong: sending again cannot help.
        case permanent
        case attemptsExhausted
        case timeExhausted
    }
}

extension Duration {
    /// The wait after `failures` failures in a row (1 for the first): `initial`, doubling with each failure up to
    /// `maximum`, then between half and all of that step as `random` (in `0..<1`) says, so that many senders that
    /// failed together do not come back together.
    package static func backoff(afterFailures failures: Int, initial: Duration, maximum: Duration, random: Double) -> Duration {
        let step = min(initial * (1 << min(max(failures - 1, 0), 30)), maximum)
        return step * (0.5 + 0.5 * min(max(random, 0), 1))
    }
}
