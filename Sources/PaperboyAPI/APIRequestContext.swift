import Foundation
import Hummingbird
import PaperboyStore

/// The per-request context: Hummingbird's core storage (with the request-scoped logger, which carries a
/// request id) plus the app a device request authenticated as.
public struct APIRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The app whose key the request carried; set by the device-key middleware.
    public var app: App?

    public init(source: Source) {
        self.coreContext = .init(source: source)
        self.app = nil
    }

    public var responseEncoder: JSONEncoder { Self.encoder }

    /// One encoder for every response (its settings never change after this, and encoding with it is thread-safe):
    /// not one made for each request, on the receipts' path among others.
    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
}
