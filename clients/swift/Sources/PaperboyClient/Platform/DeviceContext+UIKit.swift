// iOS glue: compiled only where UIKit is (an iOS app or extension), not on the Linux machine that tests this
// package; docs/app-integration.md says what is tested where.
#if canImport(UIKit) && canImport(Network)
import Foundation
import Network
import UIKit

extension DeviceContext {
    /// What the device is doing now, for a receipt: the network (`NWPathMonitor`'s first path), charging (battery
    /// monitoring switched on first: without it `batteryState` is always `.unknown`), Low Power Mode.
    ///
    /// `backgroundRefresh` comes from the caller (`UIApplication.shared.backgroundRefreshStatus == .available` in
    /// the app; nil in an extension, where `UIApplication.shared` is unavailable).
    @MainActor
    public static func current(backgroundRefresh: Bool?) async -> DeviceContext {
        UIDevice.current.isBatteryMonitoringEnabled = true
        let battery = UIDevice.current.batteryState
        let charging: Bool? = battery == .unknown ? nil : (battery == .charging || battery == .full)
        return DeviceContext(
            network: await currentNetwork(),
            charging: charging,
            lowPowerMode: ProcessInfo.processInfo.isLowPowerModeEnabled,
            backgroundRefresh: backgroundRefresh
        )
    }

    /// The first path `NWPathMonitor` reports (it reports the current one at once after `start`).
    static func currentNetwork() async -> ReceiptReport.Network? {
        let monitor = NWPathMonitor()
        let once = ResumeOnce()
        return await withCheckedContinuation { continuation in
            monitor.pathUpdateHandler = { path in
                guard once.claim() else { return }
                monitor.cancel()
                let network: ReceiptReport.Network =
                    path.status != .satisfied
                    ? .none
                    : path.usesInterfaceType(.wifi) || path.usesInterfaceType(.wiredEthernet)
                        ? .wifi
                        : path.usesInterfaceType(.cellular) ? .cellular : .wifi
                continuation.resume(returning: network)
            }
            monitor.start(queue: DispatchQueue.global(qos: .utility))
        }
    }
}

/// Lets exactly one caller through: a continuation is resumed once even if a handler fires twice.
final class ResumeOnce: @unchecked Sendable {
    private let lock = NSLock()
    private var claimed = false

    func claim() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        if claimed { return false }
        claimed = true
        return true
    }
}
#endif
