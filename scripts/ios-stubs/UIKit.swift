// A stand-in for the few iOS APIs PaperboyClient's Platform/ glue uses, so that scripts/check-client-glue.sh can
// type-check that glue on Linux. Signatures as Apple documents them; no behaviour. Not UIKit: nothing runs here.
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@MainActor public final class UIDevice {
    public static let current = UIDevice()
    public var isBatteryMonitoringEnabled = false
    public enum BatteryState: Int, Sendable { case unknown, unplugged, charging, full }
    public var batteryState: BatteryState { .unknown }
}

public enum UIBackgroundFetchResult: UInt, Sendable { case newData, noData, failed }

public enum UIBackgroundRefreshStatus: Int, Sendable { case restricted, denied, available }

@MainActor open class UIApplication {
    public static let shared = UIApplication()
    open var backgroundRefreshStatus: UIBackgroundRefreshStatus { .available }
    open func registerForRemoteNotifications() {}
}

// Foundation's members that exist on Apple's platforms only.
extension ProcessInfo {
    public var isLowPowerModeEnabled: Bool { false }
}

extension URLSessionConfiguration {
    public var sessionSendsLaunchEvents: Bool {
        get { false }
        set {}
    }
}

extension URLSession {
    public var allTasks: [URLSessionTask] { get async { [] } }
}

extension URLSessionConfiguration {
    // Foundation on Linux marks its own unavailable; an overload the type checker picks instead.
    public static func background(withIdentifier identifier: String, _ onLinux: Void = ()) -> URLSessionConfiguration { .default }
}
