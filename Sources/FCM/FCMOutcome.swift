import Foundation
import PaperboyCore
import PushTransport

/// What became of one message.
public enum FCMOutcome: PushOutcome {
    /// FCM accepted it; `name` is the message's resource name, `projects/P/messages/ID`.
    case accepted(name: String)
    /// FCM answered with an error, after any retries the policy allows.
    case rejected(FCMRejection)
    /// It was written to a connection that then failed, or timed out waiting for the answer, or something other
    /// than FCM answered: FCM may or may not have it. The client never resends these by itself, because that could
    /// wake a device twice.
    case fateUnknown(PushTransportError)
    /// It was never sent: no connection or no access token in time, the client shut down, or the sender was
    /// cancelled first. Safe to send again.
    case notSent(PushTransportError)

    /// The outcome as metrics and output lines show it; its `verdict` (what it means for the device, our credentials
    /// and the app) is the rejection's for a rejection: see ``FCMRejection/verdict``.
    public var summary: PushOutcomeSummary {
        switch self {
        case .accepted: .accepted
        case .rejected(let rejection): .rejected(status: rejection.status, reason: "\(rejection.code)", verdict: rejection.verdict)
        case .fateUnknown(let error): .fateUnknown(error)
        case .notSent(let error): .notSent(error)
        }
    }
}
