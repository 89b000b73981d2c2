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
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
