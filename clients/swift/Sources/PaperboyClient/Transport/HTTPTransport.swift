import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The HTTP the client does, in the foreground of a wake-up: the API's calls and the bundles' downloads. A protocol so
/// that tests answer as a server or a CDN would (``URLSessionTransport`` in use). Background sessions are not this:
/// they are ``BackgroundTransfers``.
public protocol HTTPTransport: Sendable {
    /// The request's answer and body.
    func data(for request: URLRequest) async throws -> (Data, URLResponse)
    /// The request's answer, its body in a temporary file that the caller moves or removes.
    func download(for request: URLRequest) async throws -> (URL, URLResponse)
}

/// ``HTTPTransport`` through a `URLSession` (`.shared` by default). A task cancelled (a ``WakeBudget`` that ran out)
/// cancels its request.
public struct URLSessionTransport: HTTPTransport {
    public let session: URLSession

    public init(session: URLSession = .shared) {
        self.session = session
    }

    public func data(for request: URLRequest) async throws -> (Data, URLResponse) {
        try await session.data(for: request)
    }

    public func download(for request: URLRequest) async throws -> (URL, URLResponse) {
        try await session.download(for: request)
    }
}
