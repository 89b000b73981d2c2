import APNs
import Crypto
import Foundation
import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import PaperboyCore
import PushSimulator
import Testing

@testable import APNsSimulator

/// The simulator's connection on HTTP/2 frames, without sockets: what a client sees frame by frame.
@Suite("Simulator connection")
struct APNsSimulatorConnectionTests {
    static let privateKey = P256.Signing.PrivateKey()
    static let key = try! APNsSigningKey(pem: privateKey.pemRepresentation, keyID: "KEY1234567", teamID: "TEAM123456")
    static let token = String(repeating: "ab", count: 32)

    let ledger = APNsSimulatorLedger(recordsAccepted: true, failureRates: [], seed: 1)

    func connect(_ faults: APNsSimulator.Faults = .init()) throws -> EmbeddedChannel {
        let rules = APNsSimulatorStreams.Rules(
            validator: APNsRequestValidator(configuration: .init(teamID: "TEAM123456", keys: ["KEY1234567": Self.privateKey.publicKey])),
            faults: faults,
            ledger: ledger
        )
        let connection = SimulatorHTTP2Connection(
            streams: APNsSimulatorStreams(rules: rules, connection: 1),
            settings: APNsSimulatorStreams.settings(faults, connection: 1),
            goAwayWriter: nil
        )
        let channel = EmbeddedChannel(handler: connection)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 2197)).wait()
        // The connection window it opens at once.
        let window = try channel.readOutbound(as: HTTP2Frame.self)
        guard case .windowUpdate = window?.payload else {
            Issue.record("expected a WINDOW_UPDATE first, got \(String(describing: window))")
            return channel
        }
        return channel
    }

    func headers(token: String = token, providerToken: String? = try! key.providerToken(issuedAt: Date())) -> HPACKHeaders {
        var headers: HPACKHeaders = [
            ":method": "POST", ":scheme": "http", ":path": "/3/device/\(token)", "apns-topic": "com.example.news",
            "apns-push-type": "background", "apns-priority": "5",
        ]
        if let providerToken { headers.add(name: "authorization", value: "bearer \(providerToken)") }
        return headers
    }

    func open(_ stream: Int, on channel: EmbeddedChannel, headers: HPACKHeaders) throws {
        try channel.writeInbound(HTTP2Frame(streamID: HTTP2StreamID(stream), payload: .headers(.init(headers: headers))))
    }

    func finish(_ stream: Int, on channel: EmbeddedChannel) throws {
        let body = ByteBuffer(string: #"{"aps":{"content-available":1}}"#)
        try channel.writeInbound(HTTP2Frame(streamID: HTTP2StreamID(stream), payload: .data(.init(data: .byteBuffer(body), endStream: true))))
    }

    func outbound(_ channel: EmbeddedChannel) throws -> [HTTP2Frame] {
        var frames: [HTTP2Frame] = []
        while let frame = try channel.readOutbound(as: HTTP2Frame.self) { frames.append(frame) }
        return frames
    }

    @Test("one stream until a valid provider token; a second one opened after the client ACKed the limit is a violation")
    func streamLimit() throws {
        let channel = try connect()
        try channel.writeInbound(HTTP2Frame(streamID: .rootStream, payload: .settings(.ack)))
        try open(1, on: channel, headers: headers())
        try open(3, on: channel, headers: headers())
        #expect(ledger.stats().streamLimitViolations == 1)
        #expect(ledger.stats().peakConcurrentStreams == 2)

        try finish(1, on: channel)
        let frames = try outbound(channel)
        // The valid token raises the limit, then stream 1 is answered 200 with HEADERS only.
        guard frames.count == 2, case .settings(.settings(let settings)) = frames[0].payload,
            case .headers(let response) = frames[1].payload
        else {
            Issue.record("unexpected frames \(frames)")
            return
        }
        #expect(settings.first { $0.parameter == .maxConcurrentStreams }?.value == 1000)
        #expect(frames[1].streamID == 1 && response.endStream && response.headers.first(name: ":status") == "200")
        #expect(response.headers.first(name: "apns-id")?.count == 36)
        #expect(ledger.acceptedCount(forToken: Self.token) == 1)
        #expect(ledger.accepts().map { "\($0.token) \($0.connection) \($0.stream ?? 0)" } == ["\(Self.token) 1 1"], "the connection and stream")
    }

    @Test("rejections and per-token outcomes answer a JSON reason; 410 carries the timestamp")
    func rejections() throws {
        var faults = APNsSimulator.Faults()
        let unregisteredAt = Date(timeIntervalSince1970: 1_700_000_000)
        faults.outcomesByTokenPrefix = [("DEAD", .init(status: 410, reason: .unregistered, timestamp: unregisteredAt))]
        let channel = try connect(faults)
        try open(1, on: channel, headers: headers(providerToken: nil))
        try finish(1, on: channel)
        try open(3, on: channel, headers: headers(token: "dead" + String(Self.token.dropFirst(4))))
        try finish(3, on: channel)
        let bodies = try outbound(channel).compactMap { frame -> String? in
            guard case .data(let data) = frame.payload, case .byteBuffer(let buffer) = data.data else { return nil }
            return String(buffer: buffer)
        }
        #expect(bodies == [#"{"reason":"MissingProviderToken"}"#, #"{"reason":"Unregistered","timestamp":1700000000000}"#])
        #expect(ledger.stats().rejected == ["MissingProviderToken": 1, "Unregistered": 1])
        #expect(ledger.stats().accepted == 0)
    }

    @Test("GOAWAY after N streams: streams up to the N-th are answered, later ones never processed, then the connection closes")
    func goAway() throws {
        var faults = APNsSimulator.Faults()
        faults.goAwayAfterStreams = 2
        let channel = try connect(faults)
        try channel.writeInbound(HTTP2Frame(streamID: .rootStream, payload: .settings(.ack)))
        try open(1, on: channel, headers: headers())
        try finish(1, on: channel)
        try open(3, on: channel, headers: headers())
        try open(5, on: channel, headers: headers())
        try finish(5, on: channel)
        let beforeLast = try outbound(channel)
        #expect(beforeLast.contains { if case .goAway(let last, .noError, _) = $0.payload { last == 3 } else { false } })
        #expect(channel.isActive)
        try finish(3, on: channel)
        channel.embeddedEventLoop.run()
        #expect(!channel.isActive)
        #expect(ledger.stats().accepted == 2)
        #expect(ledger.stats().goAwaysSent == 1)
    }

    @Test("dropping after N requests: the N-th is recorded but never answered, and the connection closes")
    func drop() throws {
        var faults = APNsSimulator.Faults()
        faults.dropConnectionAfterStreams = 1
        let channel = try connect(faults)
        try open(1, on: channel, headers: headers())
        #expect(channel.isActive)
        try finish(1, on: channel)
        let frames = try outbound(channel)
        #expect(!frames.contains { if case .headers = $0.payload { true } else { false } })
        #expect(!channel.isActive)
        #expect(ledger.acceptedCount(forToken: Self.token) == 1)
        #expect(ledger.stats().connectionsDropped == 1)
    }
}
