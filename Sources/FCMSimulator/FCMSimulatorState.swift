import Foundation

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
    var accepted = 0
    var validatedOnly = 0
    var rejected: [String: Int] = [:]
    var tokenFetches: [String: Int] = [:]
    var tokenRejections: [String: Int] = [:]
    var http2Connections = 0
    var http1Connections = 0
    var goAwaysSent = 0
    var streamLimitViolations = 0
    var peakConcurrentStreams = 0
    var acceptsPerSecond: [Int] = []
    var startedAt: Date
    var ledger: [String: [FCMSimulator.LedgerEntry]] = [:]
    var random: SplitMix64
    var messageNumber: UInt64 = 0

    init(faults: FCMSimulator.Faults, recordsLedger: Bool, now: Date) {
        self.faults = faults
        self.recordsLedger = recordsLedger
        self.startedAt = now
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
    /// records it. FCM checks authentication before the body, so a bad token wins over a bad message.
    ///
    /// - Parameters:
    ///   - projectID: the project in the request's path.
    ///   - authorization: the `authorization` header.
    ///   - verdict: ``FCMMessageValidator``'s verdict on the body (made outside the lock).
    ///   - body: the request body, for the ledger.
    mutating func send(
        projectID: String,
        authorization: String?,
        verdict: FCMMessageValidator.Verdict,
        body: @autoclosure () -> String,
        now: Date
    ) -> FCMSimulatorResponse {
        requests += 1
        var response = decide(projectID: projectID, authorization: authorization, verdict: verdict, body: body(), now: now)
        response.delay = faults.latency
        return response
    }

    private mutating func decide(
        projectID: String,
        authorization: String?,
        verdict: FCMMessageValidator.Verdict,
        body: @autoclosure () -> String,
        now: Date
    ) -> FCMSimulatorResponse {
        guard let bearer = Self.bearer(authorization), let issued = accessTokens[bearer], issued.expiresAt > now else {
            rejected["UNAUTHENTICATED", default: 0] += 1
            return .unauthenticated
        }
        guard issued.projectID == projectID else {
            rejected["PERMISSION_DENIED", default: 0] += 1
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
        if message.validateOnly {
            validatedOnly += 1
            return .json(200, #"{"name":"# + jsonString("projects/\(projectID)/messages/fake_message_id") + "}")
        }
        messageNumber += 1
        let name = "projects/\(projectID)/messages/0:\(messageNumber)%\(String(random.next(), radix: 16))"
        accepted += 1
        let second = max(0, Int(now.timeIntervalSince(startedAt)))
        if second >= acceptsPerSecond.count {
            acceptsPerSecond.append(contentsOf: repeatElement(0, count: second - acceptsPerSecond.count + 1))
        }
        acceptsPerSecond[second] += 1
        if recordsLedger { ledger[key, default: []].append(.init(at: now, outcome: "accepted", name: name, body: body())) }
        return .json(200, #"{"name":"# + jsonString(name) + "}")
    }

    private mutating func reject(_ outcome: FCMSimulator.Outcome, target: String?, now: Date) -> FCMSimulatorResponse {
        rejected[outcome.code.rawValue, default: 0] += 1
        if recordsLedger, let target { ledger[target, default: []].append(.init(at: now, outcome: outcome.code.rawValue)) }
        return outcome.response
    }

    /// Counts a request that never reached a project's send endpoint (bad path or method).
    mutating func rejectPath() {
        requests += 1
        rejected["NOT_FOUND", default: 0] += 1
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
            accepted: accepted,
            validatedOnly: validatedOnly,
            rejected: rejected,
            tokenFetches: tokenFetches,
            tokenRejections: tokenRejections,
            http2Connections: http2Connections,
            http1Connections: http1Connections,
            goAwaysSent: goAwaysSent,
            streamLimitViolations: streamLimitViolations,
            peakConcurrentStreams: peakConcurrentStreams,
            acceptsPerSecond: acceptsPerSecond,
            startedAt: startedAt
        )
    }

    /// Zeroes the counters, the ledger and the quotas; keeps trusted accounts, issued tokens, faults and iOS tokens.
    mutating func reset(now: Date) {
        var fresh = FCMSimulatorState(faults: faults, recordsLedger: recordsLedger, now: now)
        fresh.verifier = verifier
        fresh.accessTokens = accessTokens
        fresh.iosTokens = iosTokens
        fresh.random = random
        fresh.messageNumber = messageNumber
        self = fresh
    }
}

/// A small, fast, seedable generator (SplitMix64): deterministic fault draws, message ids and access tokens.
struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }

    /// A uniform value in 0..<1.
    mutating func nextUnitInterval() -> Double {
        Double(next() >> 11) * 0x1.0p-53
    }
}
