import Foundation

/// A bundle's SHA-256 in lowercase hex, read from its file: CryptoKit on iOS (Platform/), anything in tests.
public typealias BundleDigest = @Sendable (URL) throws -> String

/// The editions on the device, in a directory of the App Group's container: `<directory>/<edition id>/<n>.bundle`,
/// and `complete` once every bundle is checked.
public struct EditionStore: Sendable {
    public let directory: URL
    let digest: BundleDigest

    public init(directory: URL, digest: @escaping BundleDigest) {
        self.directory = directory
        self.digest = digest
    }

    /// Whether the edition is on the device, every bundle checked.
    public func has(editionID: String) -> Bool {
        FileManager.default.fileExists(atPath: folder(editionID).appendingPathComponent("complete").path)
    }

    func folder(_ editionID: String) -> URL { directory.appendingPathComponent(editionID, isDirectory: true) }

    func bundleURL(_ editionID: String, _ index: Int) -> URL { folder(editionID).appendingPathComponent("\(index).bundle") }

    /// Whether bundles 0..<count are all in place.
    func allPresent(editionID: String, count: Int) -> Bool {
        (0..<count).allSatisfy { FileManager.default.fileExists(atPath: bundleURL(editionID, $0).path) }
    }

    /// The bytes of the bundles in place.
    func bytes(editionID: String, count: Int) -> Int64 {
        (0..<count).reduce(Int64(0)) { total, index in
            total + ((try? FileManager.default.attributesOfItem(atPath: bundleURL(editionID, index).path)[.size] as? NSNumber)?.int64Value ?? 0)
        }
    }

    /// Marks the edition whole. Should the marker not be written, a later wave downloads it again: no receipt is
    /// lost, so the failure needs no handling beyond that.
    func markComplete(_ editionID: String) {
        try? FileManager.default.createDirectory(at: folder(editionID), withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: folder(editionID).appendingPathComponent("complete").path, contents: Data())
    }

    /// Checks a downloaded file's length and SHA-256 and moves it into place; false (and the file removed) when
    /// it is not the bundle.
    func place(_ file: URL, bundle: EditionManifest.Bundle, index: Int, editionID: String) -> Bool {
        defer { try? FileManager.default.removeItem(at: file) }
        guard let size = (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? NSNumber)?.int64Value, size == bundle.bytes,
            let sha256 = try? digest(file), sha256 == bundle.sha256.lowercased()
        else { return false }
        let target = bundleURL(editionID, index)
        try? FileManager.default.createDirectory(at: folder(editionID), withIntermediateDirectories: true)
        try? FileManager.default.removeItem(at: target)
        return (try? FileManager.default.moveItem(at: file, to: target)) != nil
    }
}
