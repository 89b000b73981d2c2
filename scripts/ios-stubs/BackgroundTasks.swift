// A stand-in for the BackgroundTasks types the outbox's glue uses (see UIKit.swift): signatures only.
import Dispatch
import Foundation

open class BGTask: NSObject {
    open var identifier: String { "" }
    open var expirationHandler: (() -> Void)?
    open func setTaskCompleted(success: Bool) {}
}

open class BGTaskRequest: NSObject {
    public let identifier: String
    open var earliestBeginDate: Date?

    public init(identifier: String) {
        self.identifier = identifier
    }
}

open class BGAppRefreshTaskRequest: BGTaskRequest {}

open class BGTaskScheduler: NSObject, @unchecked Sendable {
    public static let shared = BGTaskScheduler()
    open func register(forTaskWithIdentifier identifier: String, using queue: DispatchQueue?, launchHandler: @escaping (BGTask) -> Void) -> Bool {
        true
    }
    open func submit(_ taskRequest: BGTaskRequest) throws {}
}
