// A stand-in for CryptoKit's SHA-256 (see UIKit.swift): signatures only.
import Foundation

public struct SHA256Digest: Sequence {
    public func makeIterator() -> [UInt8].Iterator { [UInt8]().makeIterator() }
}

public struct SHA256 {
    public init() {}
    public mutating func update(data: Data) {}
    public func finalize() -> SHA256Digest { SHA256Digest() }
}
