/// An answer that is not the provider's: what a proxy, a load balancer or a wrong endpoint in the provider's place
/// sends. A simulator answers it on demand (a fault), so that tests see that a client never takes such an answer for
/// the provider's word about a token.
public struct SimulatorForeignAnswer: Sendable, Hashable {
    public var status: Int
    public var contentType: String?
    public var body: String

    public init(status: Int, contentType: String? = nil, body: String = "") {
        self.status = status
        self.contentType = contentType
        self.body = body
    }

    /// A proxy's HTML 404 page: the request never reached the provider's send endpoint.
    public static let htmlNotFound = SimulatorForeignAnswer(
        status: 404,
        contentType: "text/html",
        body: "<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1></body></html>"
    )
    /// A 410 with no body at all.
    public static let emptyGone = SimulatorForeignAnswer(status: 410)
    /// A 403 of a firewall, as JSON of its own shape.
    public static let jsonForbidden = SimulatorForeignAnswer(status: 403, contentType: "application/json", body: #"{"message":"Forbidden"}"#)
    /// A gateway that could not reach the provider.
    public static let badGateway = SimulatorForeignAnswer(
        status: 502,
        contentType: "text/html",
        body: "<html><body><h1>502 Bad Gateway</h1></body></html>"
    )
    /// A 200 without the provider's marks (no `apns-id`, no message name).
    public static let emptyOK = SimulatorForeignAnswer(status: 200)
}
