// iOS glue for the outbox's background time: compiled only where UIKit and BackgroundTasks are (an app; an extension
// cannot schedule background tasks). When to ask is ReceiptOutbox.nextAttempt's decision, tested on Linux.
#if canImport(UIKit) && canImport(BackgroundTasks)
import BackgroundTasks
import Foundation

/// ``BacklogRefresh`` as a `BGAppRefreshTask`, whose run sends the outbox (``ReceiptCourier/flush()``). List the
/// identifier in the app's Info.plist (`BGTaskSchedulerPermittedIdentifiers`) and call ``register(courier:)`` before
/// the app finishes launching (iOS's rule for `BGTaskScheduler.register`).
public final class AppRefreshBacklog: BacklogRefresh {
    public let identifier: String

    public init(identifier: String) {
        self.identifier = identifier
    }

    /// In `application(_:didFinishLaunchingWithOptions:)`: what the background time does.
    @discardableResult
    public func register(courier: ReceiptCourier) -> Bool {
        BGTaskScheduler.shared.register(forTaskWithIdentifier: identifier, using: nil) { task in
            let refresh = RefreshTask(task)
            let work = Task {
                _ = try? await courier.flush()
                refresh.completed(success: !Task.isCancelled)
            }
            task.expirationHandler = { work.cancel() }
        }
    }

    public func schedule(earliest: Date) {
        let request = BGAppRefreshTaskRequest(identifier: identifier)
        request.earliestBeginDate = earliest
        // Refused when the app has no such permitted identifier, or too many requests: the foreground sends then.
        try? BGTaskScheduler.shared.submit(request)
    }

    /// The system's task, handed to the work that completes it (iOS calls its handlers on one queue).
    private final class RefreshTask: @unchecked Sendable {
        let task: BGTask

        init(_ task: BGTask) {
            self.task = task
        }

        func completed(success: Bool) { task.setTaskCompleted(success: success) }
    }
}
#endif
