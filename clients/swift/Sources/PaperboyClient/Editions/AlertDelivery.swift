/// A Notification Service Extension's alert is delivered exactly once, with words that are true: the "ready" words
/// only when the edition is on the device, the words as sent otherwise, and as sent when iOS's time runs out first
/// (`serviceExtensionTimeWillExpire`), after which the fetch's end changes nothing. Pure: the glue
/// (Platform/EditionAlert+UserNotifications.swift) calls the content handler with what it answers.
public struct AlertDelivery: Sendable, Equatable {
    /// Which words go.
    public enum Words: Sendable, Equatable {
        /// The alert as Paperboy sent it ("the edition is out": true whatever happened).
        case asSent
        /// The app's "ready to read" words.
        case ready
    }

    /// What was delivered; nil until then.
    public private(set) var delivered: Words?

    public init() {}

    /// The fetch ended. - Returns: the words to deliver now; nil when the alert went already.
    public mutating func fetched(ready: Bool) -> Words? {
        guard delivered == nil else { return nil }
        delivered = ready ? .ready : .asSent
        return delivered
    }

    /// iOS's time runs out. - Returns: the words to deliver now (as sent); nil when the alert went already.
    public mutating func timeWillExpire() -> Words? {
        guard delivered == nil else { return nil }
        delivered = .asSent
        return delivered
    }
}
