import Foundation

/// The outbox kept in a file, with the token the device last registered: in an iOS app, in the app group's
/// container, so that the app and its Notification Service Extension (two processes) share it. Every change
/// reads, changes and writes the file under an exclusive `flock` of a lock file beside it, and writes it
/// atomically, so a receipt added by one process is never lost by the other's write.
///
/// A file that cannot be read (cut short, hand-edited, or written by a version that no longer reads) is moved aside to
/// `<name>.unreadable` (replacing an older one) and the outbox starts empty, rather than failing every receipt from
/// then on; `onUnreadable` is told (by default it logs with `NSLog`).
public struct ReceiptOutboxFile: Sendable {
    /// What the file holds.
    public struct Contents: Codable, Sendable, Equatable {
        public var outbox = ReceiptOutbox()
        /// The token of the last successful registration: the one receipts are posted under.
        public var token: PushToken?

        public init() {}
    }

    public let url: URL
    /// Told where an unreadable file was moved, and why it could not be read.
    let onUnreadable: @Sendable (_ setAside: URL, _ error: any Error) -> Void

    /// - Parameters:
    ///   - url: the file, e.g. `FileManager.default.containerURL(forSecurityApplicationGroupIdentifier:)`
    ///     + `paperboy-receipts.json`. Its directory must exist.
    ///   - onUnreadable: told when the file could not be read and was set aside (the receipts it held are lost).
    public init(url: URL, onUnreadable: @escaping @Sendable (_ setAside: URL, _ error: any Error) -> Void = ReceiptOutboxFile.log) {
        self.url = url
        self.onUnreadable = onUnreadable
    }

    /// The default `onUnreadable`: a line in the device's log.
    public static let log: @Sendable (URL, any Error) -> Void = { setAside, error in
        NSLog("Paperboy: the receipt outbox could not be read (%@): moved to %@, starting empty", "\(error)", setAside.path)
    }

    /// The contents (empty when there is no file yet).
    public func read() throws -> Contents {
        try locked { try load() }
    }

    /// Reads, changes and writes the contents under the lock.
    public func update<Value>(_ change: (inout Contents) throws -> Value) throws -> Value {
        try locked {
            var contents = try load()
            let value = try change(&contents)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            try encoder.encode(contents).write(to: url, options: .atomic)
            return value
        }
    }

    /// Under the lock. An I/O error (the file cannot be opened) is thrown; contents that do not decode are set aside.
    private func load() throws -> Contents {
        guard FileManager.default.fileExists(atPath: url.path) else { return Contents() }
        let data = try Data(contentsOf: url)
        do {
            return try JSONDecoder().decode(Contents.self, from: data)
        } catch {
            let aside = url.appendingPathExtension("unreadable")
            try? FileManager.default.removeItem(at: aside)
            try FileManager.default.moveItem(at: url, to: aside)
            onUnreadable(aside, error)
            return Contents()
        }
    }

    private func locked<Value>(_ body: () throws -> Value) throws -> Value {
        try FileLock(path: url.path + ".lock").locked(body)
    }
}
