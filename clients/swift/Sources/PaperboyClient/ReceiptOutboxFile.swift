import Foundation

/// The outbox kept in a file, with the token the device last registered: in an iOS app, in the app group's
/// container, so that the app and its Notification Service Extension (two processes) share it. Every change
/// reads, changes and writes the file under an exclusive `flock` of a lock file beside it, and writes it
/// atomically, so a receipt added by one process is never lost by the other's write.
public struct ReceiptOutboxFile: Sendable {
    /// What the file holds.
    public struct Contents: Codable, Sendable, Equatable {
        public var outbox = ReceiptOutbox()
        /// The token of the last successful registration: the one receipts are posted under.
        public var token: PushToken?

        public init() {}
    }

    public let url: URL

    /// - Parameter url: the file, e.g. `FileManager.default.containerURL(forSecurityApplicationGroupIdentifier:)`
    ///   + `paperboy-receipts.json`. Its directory must exist.
    public init(url: URL) {
        self.url = url
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

    private func load() throws -> Contents {
        guard FileManager.default.fileExists(atPath: url.path) else { return Contents() }
        return try JSONDecoder().decode(Contents.self, from: Data(contentsOf: url))
    }

    private func locked<Value>(_ body: () throws -> Value) throws -> Value {
        try FileLock(path: url.path + ".lock").locked(body)
    }
}
