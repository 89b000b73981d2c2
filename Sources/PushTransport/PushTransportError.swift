/// A failure of the connection rather than an answer of the push service.
public struct PushTransportError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable, Equatable {
        /// The connection closed (or the server reset the stream) after the request was written.
        case connectionLost
        /// No answer within the request timeout.
        case timedOut
        /// No connection to the endpoint could be made before the request's wait limit.
        case connectFailed
        /// The client was shut down.
        case shutdown
        /// The task that sent it was cancelled before it was written (or while it waited for a retry, the quota
        /// or a credential).
        case cancelled
        /// The endpoint answered, but not as the push service does (a 200 without the service's marks, a 5xx without
        /// its error body): something else on the way, such as a proxy or a wrong endpoint, answered.
        case foreignAnswer
        /// Nothing was sent: the provider refused our credentials before any message (FCM's token endpoint refused
        /// the service account, e.g. its key was deleted). Its verdict is ``PushVerdict/credentialsRejected``.
        case credentialsRefused
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
