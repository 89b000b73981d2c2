import FCMSimulator
import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import Testing

/// Cleartext HTTP/2 with prior knowledge on loopback, as Paperboy's FCM client speaks it: a NIO HTTP/2 client,
/// and raw frames for a client that breaks the stream limit.
@Suite("FCM simulator: HTTP/2", .timeLimit(.minutes(1)))
struct HTTP2Tests {
    struct Response {
        var status: Int
        var headers: HPACKHeaders
        var body: String
    }

    /// Opens an h2c connection and sends each body on its own stream, all at once.
    static func send(bodies: [String], token: String, port: Int, projectID: String = SimulatorFixture.projectID) async throws -> [Response] {
        let (connection, channel) = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    let multiplexer = try channel.pipeline.syncOperations.configureAsyncHTTP2Pipeline(mode: .client) { stream in
                        stream.eventLoop.makeSucceededVoidFuture()
                    }
                    return (channel, multiplexer)
                }
            }
        defer { connection.close(promise: nil) }
        return try await withThrowingTaskGroup(of: (Int, Response).self) { group in
            for (index, body) in bodies.enumerated() {
                group.addTask {
                    let stream = try await channel.openStream { stream in
                        stream.eventLoop.makeCompletedFuture {
                            try NIOAsyncChannel<HTTP2Frame.FramePayload, HTTP2Frame.FramePayload>(wrappingChannelSynchronously: stream)
                        }
                    }
                    return try await stream.executeThenClose { inbound, outbound in
                        let headers: HPACKHeaders = [
                            ":method": "POST", ":scheme": "http", ":authority": "127.0.0.1:\(port)",
                            ":path": "/v1/projects/\(projectID)/messages:send", "content-type": "application/json",
                            "authorization": "Bearer \(token)",
                        ]
                        try await outbound.write(.headers(.init(headers: headers)))
                        try await outbound.write(.data(.init(data: .byteBuffer(ByteBuffer(string: body)), endStream: true)))
                        var response = Response(status: 0, headers: [:], body: "")
                        for try await payload in inbound {
                            switch payload {
                            case .headers(let headers):
                                response.headers = headers.headers
                                response.status = Int(headers.headers.first(name: ":status") ?? "") ?? 0
                                if headers.endStream { return (index, response) }
                            case .data(let data):
                                if case .byteBuffer(let buffer) = data.data { response.body += String(buffer: buffer) }
                                if data.endStream { return (index, response) }
                            default:
                                break
                            }
                        }
                        return (index, response)
                    }
                }
            }
            var responses = [Response?](repeating: nil, count: bodies.count)
            for try await (index, response) in group { responses[index] = response }
            return responses.map { $0! }
        }
    }

    @Test("sends over h2c: accepted and refused messages answer as over HTTP/1.1, on one connection, bodies beyond the stream window too")
    func sendsOverHTTP2() async throws {
        var faults = FCMSimulator.Faults()
        faults.outcomesByTokenPrefix = [("dead-", .quotaExceeded(retryAfter: 12))]
        try await SimulatorFixture.with(faults: faults) { fixture in
            let token = try await fixture.accessToken()
            let responses = try await Self.send(
                bodies: [
                    Body.dataMessage(), Body.dataMessage(token: "dead-1"), #"{"message":{"token":"\#(Body.androidToken)","bogus":1}}"#,
                    // Larger than the 64 KiB stream window: the simulator must open it for the body to arrive.
                    Body.dataMessage(extra: #","notification":{"body":"\#(String(repeating: "x", count: 100_000))"}"#),
                ],
                token: token,
                port: fixture.simulator.port
            )
            #expect(responses.map(\.status) == [200, 429, 400, 400])
            #expect(responses[3].body.contains("Message is too big"))
            #expect(responses[0].body.contains("\"name\":\"projects/\(SimulatorFixture.projectID)/messages/"))
            #expect(responses[1].headers.first(name: "retry-after") == "12")
            #expect(responses[2].body.contains(#"Unknown name \"bogus\" at 'message'"#))
            let stats = fixture.simulator.stats()
            #expect(stats.http2Connections == 1)
            #expect(stats.accepted == 1)
        }
    }

    @Test("a client that respects SETTINGS_MAX_CONCURRENT_STREAMS gets everything answered, never more streams at once")
    func respectedLimit() async throws {
        var faults = FCMSimulator.Faults()
        faults.maxConcurrentStreams = 4
        try await SimulatorFixture.with(faults: faults) { fixture in
            let token = try await fixture.accessToken()
            let responses = try await Self.send(bodies: Array(repeating: Body.dataMessage(), count: 40), token: token, port: fixture.simulator.port)
            #expect(responses.allSatisfy { $0.status == 200 })
            let stats = fixture.simulator.stats()
            #expect(stats.peakConcurrentStreams <= 4)
            #expect(stats.streamLimitViolations == 0 && stats.goAwaysSent == 0)
        }
    }

    @Test(
        "a client exceeding the stream limit: goaway answers the streams within it, sends GOAWAY(REFUSED_STREAM) and closes; refuse resets only the extra stream",
        arguments: [FCMSimulator.StreamLimitAction.goAway, .refuseStream]
    )
    func exceededLimit(action: FCMSimulator.StreamLimitAction) async throws {
        var faults = FCMSimulator.Faults()
        faults.maxConcurrentStreams = 1
        faults.streamLimitAction = action
        try await SimulatorFixture.with(faults: faults) { fixture in
            let token = try await fixture.accessToken()
            try await RawHTTP2Client.with(port: fixture.simulator.port) { client in
                // Our SETTINGS ACK reaches the server before the streams: it knows we saw the limit of 1.
                try await client.write { frames in
                    frames.headers(stream: 1, token: token, port: fixture.simulator.port, endStream: false)
                    frames.headers(stream: 3, token: token, port: fixture.simulator.port, endStream: false)
                    frames.data(stream: 1, Body.dataMessage())
                    frames.data(stream: 3, Body.dataMessage())
                }
                let frames = try await client.readUntilClosedOrAnswered(stream: 1, closes: action == .goAway)
                let statuses = frames.compactMap { frame -> (Int, String)? in
                    guard case .headers(let status) = frame.kind else { return nil }
                    return (frame.stream, status)
                }
                #expect(statuses.map(\.0) == [1] && statuses.map(\.1) == ["200"])
                let goAway = frames.first { if case .goAway = $0.kind { true } else { false } }
                switch action {
                case .goAway:
                    #expect(goAway?.kind == .goAway(lastStream: 1, error: 7))
                    #expect(client.closed)
                case .refuseStream:
                    #expect(frames.contains { $0.stream == 3 && $0.kind == .reset(7) })
                    #expect(goAway == nil)
                }
            }
            let stats = fixture.simulator.stats()
            #expect(stats.streamLimitViolations == 1)
            #expect(stats.goAwaysSent == (action == .goAway ? 1 : 0))
            #expect(stats.accepted == 1)
        }
    }
}
