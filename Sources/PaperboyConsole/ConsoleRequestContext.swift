import Hummingbird
import Logging
import PaperboyAPI

/// The context of a console request: the API's (its logger carries the request id) plus the signed-in session,
/// which ``ConsoleSessionMiddleware`` reads from the cookie, the keys that signed it, and the console's origin.
public struct ConsoleRequestContext: ChildRequestContext {
    public typealias ParentContext = APIRequestContext
    public var coreContext: CoreRequestContextStorage
    /// The signed-in browser, if the request carried a good session cookie.
    var session: ConsoleSession?
    /// The keys of the console's current secret (set once the session middleware has read them).
    var keys: ConsoleKeys?
    /// Where the browser reached the console.
    var origin = ConsoleOrigin(scheme: "http", authority: "", configured: false)

    public init(context: APIRequestContext) throws {
        self.coreContext = context.coreContext
        self.session = nil
    }

    /// The CSRF token of the signed-in session, for its forms.
    var csrf: String? {
        guard let session, let keys else { return nil }
        return session.csrfToken(with: keys)
    }
}
