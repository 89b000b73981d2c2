import Foundation
import PushSimulator

/// Everything a simulator's connections share, and the decisions made on it: access tokens and their fetches,
/// faults, quotas, iOS tokens, the ledger and counters. Pure (the time is a parameter); ``FCMSimulator`` keeps
/// it behind one lock, taken once per send.
struct FCMSimulatorState: Sendable {
    struct IssuedToken: Sendable {
        var clientEmail: String
        var projectID: String
        var expiresAt: Date
    }

    var verifier = FCMAssertionVerifier()
    var accessTokens: [String: IssuedToken] = [:]
    var faults: FCMSimulator.Faults
    var quotas: [String: FCMProjectQuota] = [:]
    var iosTokens: Set<String> = []
    var recordsLedger: Bool

    var requests = 0
    var validatedOnly = 0
    var tokenFetches: [String: Int] = [:]
    var tokenRejections: [String: Int] = [:]
    var http1Connections = 0
    /// Accepts (with their connections and streams), rejections and connection events, kept as the APNs simulator
    /// keeps them; its connections opened are the HTTP/2 ones.
    var tally: SimulatorLedger
    /// What was answered per target, with the accepted messages' bodies.
    var ledger: [String: [FCMSimulator.LedgerEntry]] = [:]
    var random: SplitMix64
    var messageNumber: UInt64 = 0

    init(faults: FCMSimulator.Faults, recordsLedger: Bool, now: Date) {
        self.faults = faults
        self.recordsLedger = recordsLedger
        self.tally = SimulatorLedger(recordsAccepts: recordsLedger, now: now)
        self.random = SplitMix64(seed: faults.seed)
    }

    // MARK: Tokens

    /// Issues an access token to `account`, counting the fetch, and forgets tokens that have expired.
    mutating func issueToken(to account: FCMSimulator.ServiceAccount, lifetime: Duration, now: Date) -> (token: String, expiresIn: Int) {
        accessTokens = accessTokens.filter { $0.value.expiresAt > now }
        // From the system's generator, not the seeded one: a seed must not make tokens guessable.
        var system = SystemRandomNumberGenerator()
        var bytes = [UInt8]()
        for _ in 0..<3 { withUnsafeBytes(of: system.next()) { bytes += $0 } }
        let token = "ya29.sim-" + Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        let seconds = Double(lifetime.components.seconds) + Double(lifetime.components.attoseconds) * 1e-18
        accessTokens[token] = IssuedToken(clientEmail: account.clientEmail, projectID: account.projectID, expiresAt: now + seconds)
        tokenFetches[account.clientEmail, default: 0] += 1
        return (token, Int(seconds.rounded(.down)))
    }

    mutating func tokenRefused(_ error: String) { tokenRejections[error, default: 0] += 1 }

    // MARK: Sends

    /// Decides a send request: bearer token, project, quota, server faults, the validator's verdict, token faults;
    /// records it. FCM checks authentication before the body, so a bad token wins over a bad message. The latency
    /// fault is the caller's to add.
    ///
    /// - Parameters:
    ///   - projectID: the project in the request's path.
    ///   - authorization: the `authorization` header.
    ///   - verdict: ``FCMMessageValidator``'s verdict on the body (made outside the lock).
    ///   - body: the request body, for the ledger.
    ///   - connection: the connection's number, for the accept.
    ///   - stream: the HTTP/2 stream id, nil over HTTP/1.1.
    mutating func send(
        projectID: String,
        authorization: String?,
        verdict: FCMMessageValidator.Verdict,
        body: @autoclosure () -> String,
        connection: Int,
        stream: Int?,
        now: Date
    ) -> FCMSimulatorResponse {
        requests += 1
        guard let bearer = Self.bearer(authorization), let issued = accessTokens[bearer], issued.expiresAt > now else {
            tally.reject("UNAUTHENTICATED")
            return .unauthenticated
        }
        guard issued.projectID == projectID else {
            tally.reject("PERMISSION_DENIED")
            return .googleError(
                403,
                status: "PERMISSION_DENIED",
                message:
                    "Permission 'cloudmessaging.messages.create' denied on resource '//cloudresourcemanager.googleapis.com/projects/\(projectID)' (or it may not exist)."
            )
        }
        if let limit = faults.quotaPerMinute {
            var quota = quotas[projectID] ?? FCMProjectQuota(messagesPerMinute: limit)
            if quota.messagesPerMinute != limit { quota = FCMProjectQuota(messagesPerMinute: limit) }
            let admission = quota.admit(at: now)
            quotas[projectID] = quota
            if case .exceeded(let retryAfter) = admission {
                return reject(.quotaExceeded(retryAfter: retryAfter), target: nil, now: now)
            }
        }
        if let (outcome, count) = faults.failNext, count > 0 {
            faults.failNext = count > 1 ? (outcome, count - 1) : nil
            return reject(outcome, target: nil, now: now)
        }
        if !faults.failureRates.isEmpty {
            var draw = random.nextUnitInterval()
            for (outcome, probability) in faults.failureRates where probability > 0 {
                if draw < probability { return reject(outcome, target: nil, now: now) }
                draw -= probability
            }
        }
        let message: FCMMessageValidator.Message
        switch verdict {
        case .invalid(let text, _):
            return reject(.init(code: .invalidArgument, message: text), target: nil, now: now)
        case .valid(let valid):
            message = valid
        }
        let key = message.target.ledgerKey
        if case .token(let token) = message.target, let match = faults.outcomesByTokenPrefix.first(where: { token.hasPrefix($0.prefix) }) {
            return reject(match.outcome, target: key, now: now)
        }
        if case .token(let token) = message.target, let match = faults.foreignAnswersByTokenPrefix.first(where: { token.hasPrefix($0.prefix) }) {
            let outcome = "foreign \(match.answer.status)"
            tally.reject(outcome)
            if recordsLedger { ledger[key, default: []].append(.init(at: now, outcome: outcome)) }
            return FCMSimulatorResponse(status: match.answer.status, body: match.answer.body, contentType: match.answer.contentType ?? "text/plain")
        }
        if message.validateOnly {
            validatedOnly += 1
            return .json(200, #"{"name":"# + jsonString("projects/\(projectID)/messages/fake_message_id") + "}")
        }
        messageNumber += 1
        let name = "projects/\(projectID)/messages/0:\(messageNumber)%\(String(random.next(), radix: 16))"
        tally.accept(token: key, at: now, connection: connection, stream: stream)
        if recordsLedger { ledger[key, default: []].append(.init(at: now, outcome: "accepted", name: name, body: body())) }
        return .json(200, #"{"name":"# + jsonString(name) + "}")
    }

    private mutating func reject(_ outcome: FCMSimulator.Outcome, target: String?, now: Date) -> FCMSimulatorResponse {
        tally.reject(outcome.code.rawValue)
        if recordsLedger, let target { ledger[target, default: []].append(.init(at: now, outcome: outcome.code.rawValue)) }
        return outcome.response
    }

    /// Counts a request that never reached a project's send endpoint (bad path or method).
    mutating func rejectPath() {
        requests += 1
        tally.reject("NOT_FOUND")
    }

    /// The token of `Bearer TOKEN` (the scheme in any case).
    static func bearer(_ authorization: String?) -> String? {
        guard let authorization, authorization.count > 7, authorization.prefix(7).lowercased() == "bearer " else { return nil }
        return String(authorization.dropFirst(7))
    }

    // MARK: Stats

    var stats: FCMSimulator.Stats {
        FCMSimulator.Stats(
            requests: requests,
            accepted: tally.accepted,
            validatedOnly: validatedOnly,
            rejected: tally.rejected,
            tokenFetches: tokenFetches,
            tokenRejections: tokenRejections,
            http2Connections: tally.connectionsOpened,
            http1Connections: http1Connections,
            goAwaysSent: tally.goAwaysSent,
            streamLimitViolations: tally.streamLimitViolations,
            peakConcurrentStreams: tally.peakConcurrentStreams,
            acceptsPerSecond: tally.acceptsPerSecond,
            startedAt: tally.startedAt
        )
    }

    /// Zeroes the counters, the ledger and the quotas; keeps trusted accounts, issued tokens, faults, iOS tokens and
    /// connection numbers.
    mutating func reset(now: Date) {
        var fresh = FCMSimulatorState(faults: faults, recordsLedger: recordsLedger, now: now)
        fresh.verifier = verifier
        fresh.accessTokens = accessTokens
        fresh.iosTokens = iosTokens
        fresh.random = random
        fresh.messageNumber = messageNumber
        fresh.tally = tally
        fresh.tally.reset(now: now)
        self = fresh
    }
}
