import Foundation

/// What a provider's answer to one message means, in the same words for every provider: what a sender does
/// with the device, its credentials or the app, whatever APNs or FCM called it.
///
/// Only the provider's own answer can say that a token is dead or that our credentials were refused: an answer
/// without the provider's error body (a proxy's HTML page, an empty 404, JSON of another shape) is
/// ``misconfigured`` or ``fateUnknown`` (see ``foreignAnswer(status:)``), never ``tokenDead(since:)`` or
/// ``tokenInvalid(hint:)``.
public enum PushVerdict: Sendable, Hashable {
    /// The provider took the message.
    case accepted
    /// The provider says the token is dead: the app was uninstalled or the token expired (APNs' 410, FCM's
    /// `UNREGISTERED`). Stop sending to it until the device registers again (after `since`, when the provider says
    /// when it learned it). Per-device truth: a configuration cannot make a whole fleet answer this.
    case tokenDead(since: Date?)
    /// The provider says the token is not valid for this app: another app's or project's token, or one of the other
    /// APNs environment (`BadDeviceToken`, `DeviceTokenNotForTopic`, `SENDER_ID_MISMATCH`, an invalid registration
    /// token). For one device it is dead for this app; for every device at once the app's configuration is wrong, and
    /// `hint` says what that would be (a sender holds the deactivations and tells the operator).
    case tokenInvalid(hint: String)
    /// The provider refused *our* credentials (a provider token, an access token, a key): no message sent with
    /// them can succeed, and it is never the token's fault. Another host with other credentials may succeed.
    case credentialsRejected
    /// The app's configuration at the provider, or the endpoint we send to, is wrong: no message of this app can
    /// succeed until someone fixes it; the token is not at fault.
    case misconfigured
    /// This message did not get through and will not as it is (a payload the provider refuses); the token is fine.
    case dropped
    /// The provider is busy or failing (APNs' 429 `TooManyRequests`, 500, 503; FCM's `QUOTA_EXCEEDED`, `INTERNAL`,
    /// `UNAVAILABLE`), beyond the retries the client's policy allows: it did not take the message, and may later.
    /// Never a device's final outcome while its deadline allows another try: a sender pauses the provider and sends
    /// again once it answers.
    case unavailable
    /// It was written, and whether the provider has it cannot be told (the connection failed, no answer came, or
    /// something else answered in the provider's place). Never sent again by itself: that could wake a device twice.
    case fateUnknown
    /// It was never sent (no connection or credential in time, shut down, cancelled): safe to send again.
    case notSent

    /// The case's name, for output lines and logs: `accepted`, `tokenDead`, `tokenInvalid`, `credentialsRejected`, `misconfigured`,
    /// `dropped`, `unavailable`, `fateUnknown`, `notSent`.
    public var name: String {
        switch self {
        case .accepted: "accepted"
        case .tokenDead: "tokenDead"
        case .tokenInvalid: "tokenInvalid"
        case .credentialsRejected: "credentialsRejected"
        case .misconfigured: "misconfigured"
        case .dropped: "dropped"
        case .unavailable: "unavailable"
        case .fateUnknown: "fateUnknown"
        case .notSent: "notSent"
        }
    }

    /// What every device answering ``tokenInvalid(hint:)`` would mean; nil for the other verdicts.
    public var misconfigurationHint: String? {
        if case .tokenInvalid(let hint) = self { return hint }
        return nil
    }

    /// The verdict on an answer that does not carry the provider's own error body, by its HTTP status:
    ///
    /// - a 4xx other than 429 (a proxy's 404 page, a firewall's 403, an auth gateway's 401, a 400 from something
    ///   that did not understand the request): ``misconfigured``. The request did not reach the provider's send
    ///   endpoint as the provider expects it: the endpoint or the path to it is wrong, and every message sent that
    ///   way fails alike, whatever its token.
    /// - anything else (a 429 or 5xx relayed without the provider's body, a 502 or 504 of a gateway, a 2xx without
    ///   the provider's marks): ``fateUnknown``. A gateway that failed may have passed the request on, and a success
    ///   that the provider did not sign may not have reached it.
    public static func foreignAnswer(status: Int) -> PushVerdict {
        (400..<500).contains(status) && status != 429 ? .misconfigured : .fateUnknown
    }
}
