// iOS glue for a Notification Service Extension: compiled only where UIKit and UserNotifications are. The decision
// (which words, once) is AlertDelivery's, tested on Linux; this file calls the content handler with it.
#if canImport(UIKit) && canImport(UserNotifications)
import Foundation
import UserNotifications

extension EditionDownloader {
    /// The extension's `didReceive(_:withContentHandler:)`: for an alert with `extension`, fetches the edition
    /// (``fetchInExtension(_:arrival:)``) and delivers the alert once: with `ready`'s words when the edition is on the
    /// device, as sent otherwise, and as sent from ``EditionAlert/timeWillExpire()`` if iOS's time runs out first.
    /// Another notification is delivered as it came, at once. The content delivered is never changed afterwards.
    ///
    /// ```swift
    /// final class NotificationService: UNNotificationServiceExtension {
    ///     private var alert: EditionAlert?
    ///     override func didReceive(_ request: UNNotificationRequest,
    ///                              withContentHandler contentHandler: @escaping (UNNotificationContent) -> Void) {
    ///         alert = Editions.downloader.serve(request, ready: { $0.body = String(localized: "edition.ready.body") },
    ///                                           contentHandler: contentHandler)
    ///     }
    ///     override func serviceExtensionTimeWillExpire() { alert?.timeWillExpire() }
    /// }
    /// ```
    /// - Parameter ready: changes a copy of the alert to say the edition is ready (the extension's own localised words).
    public func serve(
        _ request: UNNotificationRequest,
        ready: @escaping @Sendable (UNMutableNotificationContent) -> Void,
        contentHandler: @escaping (UNNotificationContent) -> Void
    ) -> EditionAlert {
        let arrival = Date()
        let alert = EditionAlert(original: request.content, ready: ready, contentHandler: contentHandler)
        guard let wakeUp = try? EditionWakeUp.decode(userInfo: request.content.userInfo), wakeUp.extensionLimits != nil else {
            alert.fetched(ready: false)
            return alert
        }
        Task { alert.fetched(ready: await self.fetchInExtension(wakeUp, arrival: arrival)) }
        return alert
    }
}

/// One alert of a Notification Service Extension, delivered once (``AlertDelivery``).
public final class EditionAlert: @unchecked Sendable {
    private let original: UNNotificationContent
    private let ready: @Sendable (UNMutableNotificationContent) -> Void
    private let contentHandler: (UNNotificationContent) -> Void
    private let delivery = Locked(AlertDelivery())

    init(
        original: UNNotificationContent,
        ready: @escaping @Sendable (UNMutableNotificationContent) -> Void,
        contentHandler: @escaping (UNNotificationContent) -> Void
    ) {
        self.original = original
        self.ready = ready
        self.contentHandler = contentHandler
    }

    /// For `serviceExtensionTimeWillExpire()`: the alert as sent, unless it went already.
    public func timeWillExpire() {
        if let words = delivery.withValue({ $0.timeWillExpire() }) { deliver(words) }
    }

    func fetched(ready: Bool) {
        if let words = delivery.withValue({ $0.fetched(ready: ready) }) { deliver(words) }
    }

    private func deliver(_ words: AlertDelivery.Words) {
        switch words {
        case .asSent:
            contentHandler(original)
        case .ready:
            // A copy: the original stays as sent.
            guard let content = original.mutableCopy() as? UNMutableNotificationContent else { return contentHandler(original) }
            ready(content)
            contentHandler(content)
        }
    }
}
#endif
