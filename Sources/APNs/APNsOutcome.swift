import Foundation
import PushTransport

/// What became of one notification.
public enum APNsOutcome: Sendable, Equatable {
    /// APNs accepted it; `apnsID` is the `apns-id` it answered with.
    case accepted(apnsID: String)
    /// APNs answered with an error status, after any retries the policy allows.
    case rejected(APNsRejection)
    /// It was written to a connection that then failed, or timed out waiting for the answer: APNs may or
    /// may not have it. The client never resends these by itself, because that could wake a device twice.
    case fateUnknown(APNsTransportError)
    /// It was never sent: no connection could be made in time, or the client shut down. Safe to send again.
    case notSent(APNsTransportError)

    public var isAccepted: Bool {
        if case .accepted = self { return true }
        return false
    }
}

/// APNs refused a notification.
public struct APNsRejection: Sendable, Equatable, CustomStringConvertible {
    /// The HTTP status: 400, 403, 404, 405, 410, 413, 429, 500 or 503.
    public var status: Int
    public var reason: APNsReason
    /// For 410: when APNs learned that the token is no longer valid. Stop sending to the token unless it
    /// was registered again after this instant.
    public var timestamp: Date?
    public var apnsID: String?

    public init(status: Int, reason: APNsReason, timestamp: Date? = nil, apnsID: String? = nil) {
        self.status = status
        self.reason = reason
        self.timestamp = timestamp
        self.apnsID = apnsID
    }

    public var description: String { "\(status) \(reason)" }
}

/// Why a notification was not sent or its fate is unknown: the transport's words (``PushTransportError``).
public typealias APNsTransportError = PushTransportError
