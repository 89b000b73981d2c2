// iOS glue for the app delegate: compiled only where UIKit and BackgroundTasks are (an app). What an app delegate
// forwards to PaperboyClient, one function per UIKit call, so that the app's own delegate holds one line each and
// docs/app-integration.md shows this code (its snippets are cut from here by scripts/check-docs.py). Every decision
// is the portable types', tested on Linux.
#if canImport(UIKit) && canImport(BackgroundTasks)
import Foundation
import UIKit

extension EditionDownloader {
    /// From `application(_:didFinishLaunchingWithOptions:)`, before it returns: the outbox's background time
    /// (iOS accepts `BGTaskScheduler.register` only then) and the push token, asked for at every launch (it comes to
    /// `application(_:didRegisterForRemoteNotificationsWithDeviceToken:)`; register it there with
    /// ``ReceiptCourier/register(deviceToken:_:)``).
    @MainActor
    public static func didFinishLaunching(_ application: UIApplication, backlog: AppRefreshBacklog, courier: ReceiptCourier) {
        // snippet: ios-launch
        backlog.register(courier: courier)  // Info.plist: BGTaskSchedulerPermittedIdentifiers lists its identifier
        application.registerForRemoteNotifications()  // every launch; no permission needed for background pushes
        // end snippet: ios-launch
    }

    // snippet: ios-receive-push
    /// From `application(_:didReceiveRemoteNotification:fetchCompletionHandler:)`: an edition's push, in APNs's shape
    /// or FCM's, downloaded within its budget; the completion handler is called once its receipt is sent or kept.
    @MainActor
    public func application(
        _ application: UIApplication,
        didReceiveRemoteNotification userInfo: [AnyHashable: Any],
        fetchCompletionHandler completion: @escaping (UIBackgroundFetchResult) -> Void
    ) {
        let arrival = Date()
        let wakeUp: EditionWakeUp
        do {
            guard let decoded = try EditionWakeUp.decode(userInfo: userInfo) else { return completion(.noData) }  // not an edition's push
            wakeUp = decoded
        } catch {
            NSLog("Paperboy: an edition push that cannot be read: %@", "\(error)")  // names the key: a server or proxy bug
            return completion(.noData)
        }
        let refresh = application.backgroundRefreshStatus == .available
        Task { completion(await handle(wakeUp, arrival: arrival, backgroundRefresh: refresh)) }
    }
    // end snippet: ios-receive-push

    // snippet: ios-session-events
    /// From `application(_:handleEventsForBackgroundURLSession:completionHandler:)`: iOS relaunched the app for an
    /// edition's background session; the handler is called once its events are handled and its receipt sent.
    public func application(
        _ application: UIApplication,
        handleEventsForBackgroundURLSession identifier: String,
        completionHandler: @escaping @Sendable () -> Void
    ) {
        if !handleEvents(forBackgroundURLSession: identifier, completionHandler: completionHandler) {
            completionHandler()  // another part of the app's session
        }
    }
    // end snippet: ios-session-events
}

extension ReceiptCourier {
    // snippet: ios-register
    /// From `application(_:didRegisterForRemoteNotificationsWithDeviceToken:)`, at every launch: registers the token
    /// (`PUT /v1/devices/{token}`), then receipts go under it and those that waited are sent.
    public func register(deviceToken: Data, _ registration: DeviceRegistration) async {
        do {
            _ = try await api.register(.apns(deviceToken), registration)
            try await registered(.apns(deviceToken))
        } catch let error as PaperboyAPIError where error.reaction == .drop {
            NSLog("Paperboy: registration refused: %@", "\(error)")  // a bug: names the field
        } catch {
            // no answer, 429, 5xx: registered again at the next launch or when the app becomes active
        }
    }
    // end snippet: ios-register
}
#endif
