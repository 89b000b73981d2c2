import Foundation

/// The time a wake-up reads and waits on: the system's in use, a virtual one in tests (so that a 25-second budget
/// is tested without waiting 25 seconds). Not a `Clock`: that needs iOS 16, and the package supports iOS 15.
public protocol WakeTimer: Sendable {
    /// Now.
    var now: Date { get }
    /// Returns after `seconds`, or throws `CancellationError` when the task is cancelled first.
    func sleep(seconds: TimeInterval) async throws
}

/// The system's time.
public struct SystemWakeTimer: WakeTimer {
    public init() {}

    public var now: Date { Date() }

    public func sleep(seconds: TimeInterval) async throws {
        guard seconds > 0 else { return try Task.checkCancellation() }
        try await Task.sleep(nanoseconds: UInt64(min(seconds, 86_400) * 1_000_000_000))
    }
}
