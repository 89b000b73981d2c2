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
/// cancels its request. Redirects are followed only as ``RedirectPolicy`` allows (a task delegate of its own, so the
/// app's session needs no delegate): the API's calls (``data(for:)``) as ``RedirectPolicy/api``, the bundles
/// (``download(for:)``) as ``RedirectPolicy/bundle``. A redirect refused is the answer: a 3xx, which the API client
/// throws as an error.
public struct URLSessionTransport: HTTPTransport {
    public let session: URLSession

    public init(session: URLSession = .shared) {
        self.session = session
    }

    public func data(for request: URLRequest) async throws -> (Data, URLResponse) {
        let (data, response) = try await session.data(for: request, delegate: RedirectGuard(.api))
        try Self.check(response, of: request, .api)
        return (data, response)
    }

    public func download(for request: URLRequest) async throws -> (URL, URLResponse) {
        let (file, response) = try await session.download(for: request, delegate: RedirectGuard(.bundle))
        do {
            try Self.check(response, of: request, .bundle)
        } catch {
            try? FileManager.default.removeItem(at: file)
            throw error
        }
        return (file, response)
    }

    /// The answer's URL against the request's, after the fact: where a task delegate is not consulted (Linux's
    /// FoundationNetworking follows every redirect whatever it says), an answer from a redirect the policy refuses is
    /// not used. On iOS the delegate refuses the redirect before it is sent.
    static func check(_ response: URLResponse, of request: URLRequest, _ policy: RedirectPolicy) throws {
        guard let from = request.url, let to = response.url, from != to else { return }
        guard policy.allows(from: from, to: to) else { throw RedirectRefused(from: from, to: to) }
    }
}

/// An answer that came through a redirect the ``RedirectPolicy`` refuses.
public struct RedirectRefused: LocalizedError, Sendable, Equatable, CustomStringConvertible {
    public var from: URL
    public var to: URL

    public var description: String { "the redirect from \(from) to \(to) is refused" }
    public var errorDescription: String? { description }
}

/// Which HTTP redirects a request may follow. URLSession follows any by default, to any host, https to http included.
public enum RedirectPolicy: Sendable, Equatable {
    /// An API call, which carries the device key in `X-API-Key`: only to the same scheme, host and port (a proxy that
    /// moved a path), never off the configured host, never from https to http.
    case api
    /// A bundle (a CDN may send it to another host; its length and SHA-256 are checked): only to an http(s) URL, never
    /// from https to http.
    case bundle

    /// Whether a request to `from` may follow a redirect to `to`.
    public func allows(from: URL, to: URL) -> Bool {
        let fromScheme = from.scheme?.lowercased()
        let toScheme = to.scheme?.lowercased()
        guard toScheme == "https" || toScheme == "http", let host = to.host, !host.isEmpty else { return false }
        if fromScheme == "https", toScheme != "https" { return false }
        switch self {
        case .api:
            return fromScheme == toScheme && from.host?.lowercased() == host.lowercased() && from.port == to.port
        case .bundle:
            return true
        }
    }
}

/// The task delegate that follows a redirect only when its ``RedirectPolicy`` allows it (else the 3xx is the answer).
public final class RedirectGuard: NSObject, URLSessionTaskDelegate, Sendable {
    public let policy: RedirectPolicy

    public init(_ policy: RedirectPolicy) {
        self.policy = policy
    }

    public func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        guard let from = response.url ?? task.currentRequest?.url, let to = request.url, policy.allows(from: from, to: to) else {
            return completionHandler(nil)
        }
        completionHandler(request)
    }
}
