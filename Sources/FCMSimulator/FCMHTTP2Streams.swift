import NIOCore
import NIOHPACK
import NIOHTTP2
import PushSimulator

/// The requests of one HTTP/2 connection of the FCM simulator, answered through ``FCMSimulator/handle(_:)``; the
/// frames, the stream limit and its enforcement (``FCMSimulator/Faults/streamLimitAction``) are
/// ``SimulatorHTTP2Connection``'s. Confined to its connection's event loop.
final class FCMHTTP2Streams: SimulatorStreams {
    private let simulator: FCMSimulator
    /// This connection's number in the ledger.
    private let connection: Int

    init(simulator: FCMSimulator, connection: Int) {
        self.simulator = simulator
        self.connection = connection
    }

    /// Sets up HTTP/2 on a channel that is already active (the protocol sniffer calls this after the client's
    /// preface), with the stream limit of the faults now.
    static func configure(_ channel: any Channel, simulator: FCMSimulator, connection: Int) throws {
        let (limit, action) = simulator.streamLimit
        let settings = SimulatorHTTP2Settings(
            maxConcurrentStreams: limit,
            enforcement: action == .goAway ? .goAway : .refuseStream,
            maximumBodyBytes: FCMSimulatorRequest.maximumBodyBytes
        )
        try SimulatorHTTP2Connection.configure(
            channel,
            settings: settings,
            streams: FCMHTTP2Streams(simulator: simulator, connection: connection),
            tls: nil
        )
    }

    func record(_ event: SimulatorConnectionEvent) {
        simulator.record(event)
    }

    func answer(_ request: SimulatorRequest) -> SimulatorAnswer {
        var received = FCMSimulatorRequest(body: request.isBodyDropped ? ByteBuffer() : request.body)
        received.bodyTooLarge = request.isBodyDropped
        received.connection = connection
        received.stream = Int(request.stream)
        for header in request.headers { received.add(header: header.name, value: header.value) }
        let response = simulator.handle(received)
        var headers: [(name: String, value: String)] = [
            ("content-type", response.contentType), ("content-length", String(response.body.utf8.count)),
        ]
        if let retryAfter = response.retryAfter { headers.append(("retry-after", String(retryAfter))) }
        return .respond(
            SimulatorResponse(status: response.status, headers: headers, body: ByteBuffer(string: response.body)),
            after: response.delay > .zero ? TimeAmount(response.delay) : nil
        )
    }
}
