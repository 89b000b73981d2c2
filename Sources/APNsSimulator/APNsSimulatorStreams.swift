import APNs
import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOSSL
import PaperboyCore
import PushSimulator

/// What the APNs simulator does with the requests of one connection: validates each as APNs does, applies the
/// faults and answers with APNs's statuses and reasons. The frames are ``SimulatorHTTP2Connection``'s. Confined to
/// its connection's event loop.
final class APNsSimulatorStreams: SimulatorStreams {
    /// What all connections of one simulator share.
    struct Rules: Sendable {
        var validator: APNsRequestValidator
        var faults: APNsSimulator.Faults
        var ledger: APNsSimulatorLedger
        var onAccept: (@Sendable (APNsSimulator.Delivery) -> Void)?
    }

    private let rules: Rules
    /// This connection's number in the ledger.
    private let connection: Int
    private let tokenOutcomes: [(prefix: String, outcome: APNsSimulator.Outcome)]
    private let foreignAnswers: [(prefix: String, answer: SimulatorForeignAnswer)]
    private let latency: TimeAmount?
    private let latencyByToken: [(prefix: String, latency: TimeAmount?)]
    private var providerTokens = APNsRequestValidator.ProviderTokenCache()
    private var raisedLimit = false
    private var requestsCompleted = 0
    private var messageIDs = SplitMix64(seed: UInt64.random(in: .min ... .max))

    init(rules: Rules, connection: Int) {
        self.rules = rules
        self.connection = connection
        self.tokenOutcomes = rules.faults.outcomesByTokenPrefix.map { ($0.prefix.lowercased(), $0.outcome) }
        self.foreignAnswers = rules.faults.foreignAnswersByTokenPrefix.map { ($0.prefix.lowercased(), $0.answer) }
        self.latency = rules.faults.latency > .zero ? TimeAmount(rules.faults.latency) : nil
        self.latencyByToken = rules.faults.latencyByTokenPrefix.map {
            ($0.prefix.lowercased(), $0.latency > .zero ? TimeAmount($0.latency) : nil)
        }
    }

    /// Numbers a new child channel and, unless a fault keeps it silent, sets it up as an APNs connection: TLS when
    /// given, HTTP/2 advertising one stream until the first valid provider token.
    static func configure(_ channel: any Channel, rules: Rules, tls: NIOSSLContext?) throws {
        let number = rules.ledger.connectionAccepted()
        // A black hole: the TCP connection stays open and nothing answers, not even the TLS handshake.
        if number <= rules.faults.silentConnections { return }
        try SimulatorHTTP2Connection.configure(
            channel,
            settings: settings(rules.faults, connection: number),
            streams: APNsSimulatorStreams(rules: rules, connection: number),
            tls: tls
        )
    }

    /// Connection `number`'s HTTP/2 settings: APNs's stream limit until a valid provider token, enforced by NIO,
    /// payloads kept up to APNs's limit, and the connection faults.
    static func settings(_ faults: APNsSimulator.Faults, connection number: Int) -> SimulatorHTTP2Settings {
        var settings = SimulatorHTTP2Settings(
            maxConcurrentStreams: faults.initialMaxConcurrentStreams,
            enforcement: .byNIO,
            maximumBodyBytes: APNsNotification.maximumPayloadBytes + 1
        )
        settings.goesAwayAtStart = number <= faults.goAwayAtStartForConnections
        settings.lateAnswerBodyBytes = faults.lateAnswerBodyBytes
        return settings
    }

    func record(_ event: SimulatorConnectionEvent) {
        rules.ledger.record(event)
    }

    func goesAway(afterOpening count: Int) -> Bool {
        rules.faults.goAwayAfterStreams == count
    }

    func answer(_ request: SimulatorRequest) -> SimulatorAnswer {
        requestsCompleted += 1
        let now = Date()
        var head = APNsRequestValidator.Head()
        for header in request.headers { head.add(name: header.name, value: header.value) }
        let body = request.body.readableBytesView
        let verdict: APNsRequestValidator.Verdict
        if request.isBodyDropped {
            // The body was too large to keep: only its length is judged, after the other rules.
            verdict = rules.validator.validate(
                head,
                body: repeatElement(UInt8(ascii: "{"), count: request.bodyBytes),
                now: now,
                providerTokens: &providerTokens
            )
        } else {
            verdict = rules.validator.validate(head, body: body, now: now, providerTokens: &providerTokens)
        }
        var delay = latency
        var outcome: APNsSimulator.Outcome?
        var foreign: SimulatorForeignAnswer?
        switch verdict {
        case .accepted(let token):
            if let match = latencyByToken.first(where: { token.hasPrefix($0.prefix) }) { delay = match.latency }
            if let match = tokenOutcomes.first(where: { token.hasPrefix($0.prefix) }) {
                rules.ledger.reject(match.outcome.reason.rawValue)
                outcome = match.outcome
            } else if let match = foreignAnswers.first(where: { token.hasPrefix($0.prefix) }) {
                rules.ledger.reject("foreign \(match.answer.status)")
                foreign = match.answer
            } else {
                outcome = rules.ledger.admit(token: token, at: now, connection: connection, stream: Int(request.stream))
                if outcome == nil, let onAccept = rules.onAccept {
                    onAccept(
                        APNsSimulator.Delivery(
                            token: token,
                            pushType: head.pushType ?? "alert",
                            topic: head.topic,
                            payload: Array(body),
                            acceptedAt: now
                        )
                    )
                }
            }
        case .rejected(let status, let reason):
            rules.ledger.reject(reason.rawValue)
            outcome = APNsSimulator.Outcome(status: status, reason: reason)
        }
        var raise: Int?
        if !raisedLimit, providerTokens.hasAcceptedToken {
            raisedLimit = true
            raise = rules.faults.maxConcurrentStreams
        }
        if let limit = rules.faults.dropConnectionAfterStreams, requestsCompleted == limit { return .dropConnection }
        let response: SimulatorResponse
        if let foreign {
            response = SimulatorResponse(
                status: foreign.status,
                headers: foreign.contentType.map { [("content-type", $0)] } ?? [],
                body: foreign.body.isEmpty ? nil : ByteBuffer(string: foreign.body)
            )
        } else {
            response = Self.response(outcome, apnsID: head.apnsID ?? makeAPNsID(), at: now)
        }
        return .respond(response, after: delay, advertisingStreamLimit: raise)
    }

    /// 200 with only HEADERS, or the outcome's status and a JSON `reason` (and `timestamp` for 410).
    private static func response(_ outcome: APNsSimulator.Outcome?, apnsID: String, at now: Date) -> SimulatorResponse {
        guard let outcome else { return SimulatorResponse(status: 200, headers: [("apns-id", apnsID)]) }
        var body = ByteBuffer()
        body.reserveCapacity(96)
        body.writeString(#"{"reason":""#)
        body.writeString(outcome.reason.rawValue)
        if outcome.status == 410 {
            let timestamp = outcome.timestamp ?? now
            body.writeString(#"","timestamp":"#)
            body.writeString(String(Int64((timestamp.timeIntervalSince1970 * 1000).rounded())))
            body.writeString("}")
        } else {
            body.writeString(#""}"#)
        }
        return SimulatorResponse(status: outcome.status, headers: [("content-type", "application/json"), ("apns-id", apnsID)], body: body)
    }

    /// A new lowercase UUID (version 4 layout) for a response whose request carried no `apns-id`.
    private func makeAPNsID() -> String {
        let high = messageIDs.next() & 0xffff_ffff_ffff_0fff | 0x0000_0000_0000_4000
        let low = messageIDs.next() & 0x3fff_ffff_ffff_ffff | 0x8000_0000_0000_0000
        let digits: StaticString = "0123456789abcdef"
        return String(unsafeUninitializedCapacity: 36) { buffer in
            var index = 0
            func put(_ value: UInt64, nibbles: Int) {
                var shift = (nibbles - 1) * 4
                while shift >= 0 {
                    buffer[index] = digits.utf8Start[Int((value >> UInt64(shift)) & 0xf)]
                    index += 1
                    shift -= 4
                }
            }
            put(high >> 32, nibbles: 8)
            buffer[index] = UInt8(ascii: "-")
            index += 1
            put((high >> 16) & 0xffff, nibbles: 4)
            buffer[index] = UInt8(ascii: "-")
            index += 1
            put(high & 0xffff, nibbles: 4)
            buffer[index] = UInt8(ascii: "-")
            index += 1
            put(low >> 48, nibbles: 4)
            buffer[index] = UInt8(ascii: "-")
            index += 1
            put(low & 0xffff_ffff_ffff, nibbles: 12)
            return index
        }
    }
}
