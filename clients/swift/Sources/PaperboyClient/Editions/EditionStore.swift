import Foundation

/// A bundle's SHA-256 in lowercase hex, read from its file: CryptoKit on iOS (Platform/), anything in tests.
public typealias BundleDigest = @Sendable (URL) throws -> String

/// The editions on the device, in a directory of the App Group's container, shared by the app and its Notification
/// Service Extension (two processes): each edition's record (`<id>/edition.json`: the tier held, the claim) is read
/// and written under a file lock.
///
/// The rules:
/// 1. One writer per edition: a download starts with a ``claim(_:writer:until:at:replacing:)``, which answers
///    `held` when the edition is already there (post `noData`), `busy` while another live claim stands (the app's
///    background session, the extension's fetch: leave it alone, post nothing), or the claim. A claim lives until
///    its `until` (the wake's budget, or the deadline once a background session carries it); after that it may be
///    taken over, and its bundles go with it (its writer, should it come back, cannot complete).
/// 2. A writer writes only into its claim's own folder (`<id>/partial-<claim>/<n>.bundle`), each file checked (length,
///    SHA-256) before it is moved there; nothing of another writer's is ever overwritten.
/// 3. ``complete(_:editionID:)`` moves the claim's bundles into `<id>/<tier>/` and records the tier held, unless a tier
///    as large is held already (the claim's bundles are then dropped: the device had the edition). A larger tier
///    replaces a smaller one.
/// 4. ``release(_:editionID:)`` (a failure) drops the claim's bundles and frees the edition.
public struct EditionStore: Sendable {
    /// Who writes an edition.
    public enum Writer: String, Codable, Sendable {
        /// The app: its wake-up and its background sessions.
        case app
        /// The Notification Service Extension.
        case appExtension = "extension"
    }

    /// The right to write an edition, for a while.
    public struct Claim: Codable, Sendable, Equatable {
        public var id: UUID
        public var writer: Writer
        /// The tier being downloaded, once the manifest said which.
        public var tier: ImageTier?
        /// When it lapses unless extended.
        public var until: Date
    }

    /// The answer to a claim.
    public enum Claiming: Sendable, Equatable {
        /// Yours: download.
        case claimed(Claim)
        /// The edition is on the device, of this tier: nothing to download (post `noData`).
        case held(ImageTier)
        /// Another live claim stands.
        case busy(Claim)
    }

    /// What completing a claim did.
    public enum Completion: Sendable, Equatable {
        /// The claim's bundles are the edition now, of this tier (post `newData`).
        case committed(ImageTier)
        /// A tier as large was there already; the claim's bundles were dropped (post `noData`).
        case alreadyHeld(ImageTier)
    }

    /// An edition's record.
    struct Record: Codable, Equatable {
        var held: ImageTier?
        var claim: Claim?
    }

    public let directory: URL
    let digest: BundleDigest

    public init(directory: URL, digest: @escaping BundleDigest) {
        self.directory = directory
        self.digest = digest
    }

    /// The tier of the edition on the device; nil when it is not there (whole and checked).
    public func held(editionID: String) -> ImageTier? {
        (try? locked(editionID) { try load(editionID) })?.held
    }

    /// Whether the edition is on the device, every bundle checked.
    public func has(editionID: String) -> Bool { held(editionID: editionID) != nil }

    /// The edition's bundle files, in order: what the reader's pages are made from. Empty when it is not there.
    public func bundles(editionID: String) -> [URL] {
        guard let tier = held(editionID: editionID) else { return [] }
        let folder = tierFolder(editionID, tier)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.compactMap { name in Int(name.split(separator: ".").first ?? "").map { ($0, name) } }
            .sorted { $0.0 < $1.0 }
            .map { folder.appendingPathComponent($0.1) }
    }

    /// The current claim on the edition, live or lapsed.
    public func claim(of editionID: String) -> Claim? {
        (try? locked(editionID) { try load(editionID) })?.claim
    }

    /// Claims the edition for `writer` until `until` (rule 1).
    /// - Parameter replacing: a claim of this writer's own that it knows is dead (its background session has no
    ///   transfers left): taken over even though it has not lapsed.
    public func claim(_ editionID: String, writer: Writer, until: Date, at now: Date, replacing: Claim? = nil) throws -> Claiming {
        try locked(editionID) {
            var record = try load(editionID)
            if let held = record.held { return .held(held) }
            if let current = record.claim, current.until > now, current != replacing { return .busy(current) }
            if let lapsed = record.claim { try? FileManager.default.removeItem(at: partialFolder(editionID, lapsed)) }
            let claim = Claim(id: UUID(), writer: writer, tier: nil, until: until)
            record.claim = claim
            try save(record, editionID)
            return .claimed(claim)
        }
    }

    /// Records the claim's tier and extends it (to the deadline, when a background session carries it on).
    /// - Returns: the claim as it stands now; nil when it is no longer the edition's (taken over, or released).
    public func extend(_ claim: Claim, editionID: String, tier: ImageTier, until: Date) throws -> Claim? {
        try locked(editionID) {
            var record = try load(editionID)
            guard record.claim?.id == claim.id else { return nil }
            record.claim?.tier = tier
            record.claim?.until = until
            try save(record, editionID)
            return record.claim
        }
    }

    /// Checks a downloaded file's length and SHA-256 and moves it into the claim's folder as bundle `index`; false
    /// (and the file removed) when it is not the bundle (rule 2).
    public func place(_ file: URL, bundle: EditionManifest.Bundle, index: Int, claim: Claim, editionID: String) -> Bool {
        defer { try? FileManager.default.removeItem(at: file) }
        guard let size = (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? NSNumber)?.int64Value, size == bundle.bytes,
            let sha256 = try? digest(file), sha256 == bundle.sha256.lowercased()
        else { return false }
        let folder = partialFolder(editionID, claim)
        let target = folder.appendingPathComponent("\(index).bundle")
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try? FileManager.default.removeItem(at: target)
        return (try? FileManager.default.moveItem(at: file, to: target)) != nil
    }

    /// Whether the claim's folder has bundles 0..<count.
    public func hasAll(_ count: Int, claim: Claim, editionID: String) -> Bool {
        (0..<count).allSatisfy { FileManager.default.fileExists(atPath: partialFolder(editionID, claim).appendingPathComponent("\($0).bundle").path) }
    }

    /// The claim's bundles' bytes, and when the last of them arrived (its file's modification time: when the bytes
    /// were written, not when the app heard of it).
    public func arrived(_ claim: Claim, editionID: String) -> (bytes: Int64, last: Date?) {
        let folder = partialFolder(editionID, claim)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        var bytes: Int64 = 0
        var last: Date?
        for name in names {
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent(name).path) else { continue }
            bytes += (attributes[.size] as? NSNumber)?.int64Value ?? 0
            if let modified = attributes[.modificationDate] as? Date { last = max(last ?? modified, modified) }
        }
        return (bytes, last)
    }

    /// Makes the claim's bundles the edition (rule 3).
    public func complete(_ claim: Claim, editionID: String) throws -> Completion {
        try locked(editionID) {
            var record = try load(editionID)
            let tier = record.claim?.id == claim.id ? record.claim?.tier ?? claim.tier : claim.tier
            guard let tier else { throw CocoaError(.fileWriteUnknown, userInfo: [NSDebugDescriptionErrorKey: "a claim without its tier"]) }
            if record.claim?.id == claim.id { record.claim = nil }
            if let held = record.held, held >= tier {
                try? FileManager.default.removeItem(at: partialFolder(editionID, claim))
                try save(record, editionID)
                return .alreadyHeld(held)
            }
            let target = tierFolder(editionID, tier)
            try? FileManager.default.removeItem(at: target)
            try FileManager.default.moveItem(at: partialFolder(editionID, claim), to: target)
            if let previous = record.held, previous != tier { try? FileManager.default.removeItem(at: tierFolder(editionID, previous)) }
            record.held = tier
            try save(record, editionID)
            return .committed(tier)
        }
    }

    /// Drops the claim's bundles and frees the edition (rule 4). Nothing when the claim is no longer its own.
    /// - Returns: whether the claim was the edition's.
    @discardableResult
    public func release(_ claim: Claim, editionID: String) -> Bool {
        (try? locked(editionID) {
            try? FileManager.default.removeItem(at: partialFolder(editionID, claim))
            var record = try load(editionID)
            guard record.claim?.id == claim.id else { return false }
            record.claim = nil
            try save(record, editionID)
            return true
        }) ?? false
    }

    /// Removes the edition from the device (the app's own pruning of old editions), whoever held it.
    public func remove(editionID: String) throws {
        try locked(editionID) {
            if FileManager.default.fileExists(atPath: folder(editionID).path) { try FileManager.default.removeItem(at: folder(editionID)) }
        }
        try? FileManager.default.removeItem(at: directory.appendingPathComponent("\(editionID).lock"))
    }

    // MARK: files

    private func folder(_ editionID: String) -> URL { directory.appendingPathComponent(editionID, isDirectory: true) }

    private func tierFolder(_ editionID: String, _ tier: ImageTier) -> URL {
        folder(editionID).appendingPathComponent(tier.rawValue, isDirectory: true)
    }

    private func partialFolder(_ editionID: String, _ claim: Claim) -> URL {
        folder(editionID).appendingPathComponent("partial-\(claim.id.uuidString.lowercased())", isDirectory: true)
    }

    private func recordURL(_ editionID: String) -> URL { folder(editionID).appendingPathComponent("edition.json") }

    private func load(_ editionID: String) throws -> Record {
        guard FileManager.default.fileExists(atPath: recordURL(editionID).path) else { return Record() }
        return try JSONDecoder().decode(Record.self, from: Data(contentsOf: recordURL(editionID)))
    }

    private func save(_ record: Record, _ editionID: String) throws {
        try JSONEncoder().encode(record).write(to: recordURL(editionID), options: .atomic)
    }

    /// Under the edition's lock (a file beside its folder, shared with the other process).
    private func locked<Value>(_ editionID: String, _ body: () throws -> Value) throws -> Value {
        try FileManager.default.createDirectory(at: folder(editionID), withIntermediateDirectories: true)
        return try FileLock(path: directory.appendingPathComponent("\(editionID).lock").path).locked(body)
    }
}
