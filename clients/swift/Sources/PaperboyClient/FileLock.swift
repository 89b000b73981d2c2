import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// An exclusive `flock` of a lock file, held for one body: what the app and its Notification Service Extension (two
/// processes sharing the App Group's container) use to change a shared file without losing each other's writes.
struct FileLock: Sendable {
    let path: String

    func locked<Value>(_ body: () throws -> Value) throws -> Value {
        let descriptor = open(path, O_CREAT | O_RDWR, 0o644)
        guard descriptor >= 0 else { throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: path]) }
        defer { close(descriptor) }
        while flock(descriptor, LOCK_EX) != 0 {
            guard errno == EINTR else { throw CocoaError(.fileLocking, userInfo: [NSFilePathErrorKey: path]) }
        }
        defer { flock(descriptor, LOCK_UN) }
        return try body()
    }
}

/// A value behind a lock, for the few classes that keep mutable state across threads (`NSLock`, not `withLock`:
/// that needs iOS 16, and the package supports iOS 15).
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withValue<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
