import NIOCore
import NIOHPACK
import PaperboyCore

/// A push service as ``PushClient`` sees it: where its credentials come from, how a delivery becomes a request,
/// how an answer becomes the provider's outcome, and when a message is sent again. APNs and FCM are one
/// conformance each; a third provider would be one more.
///
/// The client does the rest, the same for every provider: the connections (``PushConnectionPool``), the
/// send–classify–retry loop, retry waves, refreshing a refused credential once per call, cancellation and the
/// metrics. What a conformance decides stays pure where it can: ``outcome(status:headers:body:)`` and
/// ``retry(after:attempt:elapsed:random:)`` read values and return values, so tests check them without I/O.
public protocol PushProviderProtocol: Sendable {
    /// One message for one device, as the caller hands it over.
    associatedtype Delivery: Sendable
    /// What became of one delivery, in the provider's words.
    associatedtype Outcome: PushOutcome
    associatedtype Configuration: PushClientConfiguration

    /// The service's name in messages and log keys ("APNs", "FCM"); lower-cased, the prefix of metric names.
    static var service: String { get }
    /// The metric dimension a rejection's reason is counted under: `reason` for APNs, `code` for FCM.
    static var reasonDimension: String { get }

    /// The credential to send with now (a provider token, an access token), made or fetched when due.
    ///
    /// - Throws: why there is none; the deliveries of the attempt end as not sent, with this error.
    func credential() async throws(PushTransportError) -> String
    /// The provider refused `credential` as expired or unknown: the next ``credential()`` may replace it.
    func credentialRejected(_ credential: String) async
    /// How long `count` requests wait before they go out: a quota's pacing, zero for a provider without one. Every
    /// attempt is counted: providers count rejected requests against the quota too.
    func admit(_ count: Int) -> Duration
    /// The requests for `deliveries`, in their order, authorized with `credential`.
    func requests(for deliveries: [Delivery], credential: String) -> [PushRequest]
    /// The provider's outcome of an answer; only the provider's own answer may say a token is dead.
    func outcome(status: Int, headers: HPACKHeaders, body: ByteBuffer?) -> Outcome
    /// Whether attempt `attempt` (1 for the first) of a delivery that ended in `outcome`, `elapsed` after the first
    /// attempt began, is sent again.
    ///
    /// - Parameter random: a number in `0..<1` for jitter; tests pass their own.
    func retry(after outcome: Outcome, attempt: Int, elapsed: Duration, random: Double) -> PushRetry
}

extension PushProviderProtocol {
    /// No quota: requests go out at once.
    public func admit(_ count: Int) -> Duration { .zero }
}

/// A request's headers (the pseudo-headers included) and body, as a provider builds it.
public struct PushRequest: Sendable {
    public var headers: HPACKHeaders
    public var body: ByteBuffer

    public init(headers: HPACKHeaders, body: ByteBuffer) {
        self.headers = headers
        self.body = body
    }
}

/// Whether a delivery is sent again.
public enum PushRetry: Sendable, Equatable {
    /// The outcome stands.
    case no
    /// Sent again after this long (a backoff, a `Retry-After`).
    case after(Duration)
    /// The provider refused the credential (ExpiredProviderToken, 401 UNAUTHENTICATED): sent again at once with a
    /// new one, once per call; if the credential source has no new one yet, or this was the second refusal, the
    /// outcome stands.
    case withFreshCredential
}

/// What every provider's outcome can say: how the client makes the outcomes it decides itself (not sent, fate
/// unknown), and what the outcome means (``PushVerdict``), for senders and metrics.
public protocol PushOutcome: Sendable, Equatable {
    /// It was written and whether the provider has it cannot be told.
    static func fateUnknown(_ error: PushTransportError) -> Self
    /// It was never sent.
    static func notSent(_ error: PushTransportError) -> Self
    /// The outcome as metrics, output lines and senders see it, its verdict included.
    var summary: PushOutcomeSummary { get }
}

extension PushOutcome {
    /// What the outcome means, in provider-neutral words: the dispatcher's switch.
    public var verdict: PushVerdict { summary.verdict }

    public var isAccepted: Bool { summary == .accepted }
}

/// An outcome as metrics, output lines and senders see it, whatever the provider: accepted, rejected with the
/// HTTP status, the reason as the provider spells it and what it means, or a transport failure.
public enum PushOutcomeSummary: Sendable, Equatable {
    case accepted
    /// The provider's (or something else's) HTTP status, the reason as the provider spells it (`Unregistered`,
    /// `UNREGISTERED`), and what the rejection means.
    case rejected(status: Int, reason: String, verdict: PushVerdict)
    case fateUnknown(PushTransportError)
    case notSent(PushTransportError)

    /// What the outcome means.
    public var verdict: PushVerdict {
        switch self {
        case .accepted: .accepted
        case .rejected(_, _, let verdict): verdict
        case .fateUnknown: .fateUnknown
        case .notSent(let error): error.code == .credentialsRefused ? .credentialsRejected : .notSent
        }
    }

    /// `accepted`, `rejected`, `fateUnknown` or `notSent`: the words of `--json` output.
    public var name: String {
        switch self {
        case .accepted: "accepted"
        case .rejected: "rejected"
        case .fateUnknown: "fateUnknown"
        case .notSent: "notSent"
        }
    }
}
