// A stand-in for the UserNotifications types the extension's glue uses (see UIKit.swift): signatures only.
import Foundation

open class UNNotificationContent: NSObject, @unchecked Sendable {
    open var userInfo: [AnyHashable: Any] { [:] }
    open var body: String { "" }
    open override func mutableCopy() -> Any { UNMutableNotificationContent() }
}

open class UNMutableNotificationContent: UNNotificationContent, @unchecked Sendable {
    private var text = ""
    open override var body: String {
        get { text }
        set { text = newValue }
    }
}

open class UNNotificationRequest: NSObject, @unchecked Sendable {
    open var content: UNNotificationContent { UNNotificationContent() }
}
