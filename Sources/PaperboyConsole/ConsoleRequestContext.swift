import Hummingbird
import Logging
import PaperboyAPI

/// The context of a console request: the API's (its logger carries the request id) plus the signed-in session,
/// which ``ConsoleSessionMiddleware`` reads from the cookie.
public struct ConsoleRequestContext: ChildRequestContext {
    public typealias ParentContext = APIRequestContext
    public var coreContext: CoreRequestContextStorage
    /// The signed-in browser, if the request carried a good session cookie.
    var session: ConsoleSession?

    public init(context: APIRequestContext) throws {
        self.coreContext = context.coreContext
        self.session = nil
    }
}
