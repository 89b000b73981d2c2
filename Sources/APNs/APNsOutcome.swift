import Foundation
import PaperboyCore
import PushTransport

/// What became of one notification.
public enum APNsOutcome: PushOutcome {
    /// APNs accepted it; `apnsID` is the `apns-id` it answered with.
    case accepted(apnsID: String)
    /// APNs answered with an error status, after any retries the policy allows.
    case rejected(APNsRejection)
    /// It was written to a connection that then failed, or timed out waiting for the answer, or something other
    /// than APNs answered: APNs may or may not have it. The client never resends these by itself, because that
    /// could wake a device twice.
    case fateUnknown(APNsTransportError)
    /// It was never sent: no connection could be made in time, the client shut down, or the sender was
    /// cancelled first. Safe to send again.
    case notSent(APNsTransportError)

    /// The outcome as metrics and output lines show it; its `verdict` (what it means for the device, our credentials
    /// and the app) is the rejection's for a rejection: see ``APNsRejection/verdict``.
    public var summary: PushOutcomeSummary {
        switch self {
        case .accepted: .accepted
        case .rejected(let rejection): .rejected(status: rejection.status, reason: rejection.reason.rawValue, verdict: rejection.verdict)
        case .fateUnknown(let error): .fateUnknown(error)
        case .notSent(let error): .notSent(error)
        }
    }
}

/// Why a notification was not sent or its fate is unknown: the transport's words (``PushTransportError``).
public typealias APNsTransportError = PushTransportError
