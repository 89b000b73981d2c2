import Crypto
import Foundation
import NIOCore
import PaperboyCore
import Synchronization

/// The encoded responses of recently read editions, by id. Editions are immutable once published, so an
/// entry never goes stale; the oldest is dropped beyond `capacity`.
final class EditionCache: Sendable {
    struct Entry: Sendable {
        var appID: Int
        var body: ByteBuffer
        /// A strong ETag: the body's SHA-256, quoted.
        var etag: String

        init(_ edition: Edition) throws {
            let data = try EditionRoutes.encode(edition)
            appID = edition.appID
            body = ByteBuffer(bytes: data)
            etag = "\"\(Hex.encode(SHA256.hash(data: data)))\""
        }
    }

    private struct State {
        var entries: [UUID: Entry] = [:]
        var order: [UUID] = []
    }

    private let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int) {
        self.capacity = capacity
    }

    subscript(id: UUID) -> Entry? {
        state.withLock { $0.entries[id] }
    }

    func insert(_ entry: Entry, for id: UUID) {
        state.withLock { state in
            if state.entries.updateValue(entry, forKey: id) == nil { state.order.append(id) }
            while state.order.count > capacity { state.entries[state.order.removeFirst()] = nil }
        }
    }
}
