import Foundation
import PaperboyCore

/// What became of one target of a batch.
public struct BatchOutcome: Sendable, Equatable {
    public enum Result: Sendable, Equatable {
        case accepted
        /// The provider refused it; a deactivation when the answer says the token itself is dead or wrong.
        case rejected(reason: String, deactivates: Deactivation?)
        case fateUnknown
        case notSent
        /// Not sent, for the reason given.
        case skipped(SkipReason)
    }

    /// When a rejected token stopped being valid: a device registered after it stays (or becomes) active.
    public enum Deactivation: Sendable, Equatable {
        /// APNs' own time (410's `timestamp`).
        case at(Date)
        /// The database's clock when the outcome is recorded: the answer carried no time, and a worker's
        /// clock may disagree with the database's, which writes `registered_at`.
        case whenRecorded
        /// Held, not applied: the provider said the token is not valid for this app (`BadDeviceToken`,
        /// `DeviceTokenNotForTopic`, `SENDER_ID_MISMATCH`, an invalid registration token), which is the token's fault
        /// for one device and the app's configuration's when every device hears it. Applied once no misconfiguration
        /// of the app at that provider was suspected meanwhile (`held_deactivations`, migration 0023).
        case deferred
    }

    public var deviceID: Int64
    public var sentAt: Date
    public var result: Result
    /// Who it went through, for the counts per provider.
    public var provider: PushProvider
    /// An alert sent in a background wave (the ready alert), recorded as no background push.
    public var alert: Bool
    /// For a "not valid for this app" answer (``Deactivation/deferred``): what it would mean from every device (the
    /// provider's own words, ``PushVerdict/misconfigurationHint``), kept with the fleet's evidence for the hold's reason.
    public var hint: String?

    public init(deviceID: Int64, sentAt: Date, result: Result, provider: PushProvider = .apns, alert: Bool = false, hint: String? = nil) {
        self.deviceID = deviceID
        self.sentAt = sentAt
        self.result = result
        self.provider = provider
        self.alert = alert
        self.hint = hint
    }
}

extension BatchOutcome {
    /// Skipped: nothing was sent, so nothing is recorded in the delivery ledger.
    public var isSkip: Bool {
        if case .skipped = result { return true }
        return false
    }
}
