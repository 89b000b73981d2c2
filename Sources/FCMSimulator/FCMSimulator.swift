import Foundation
import NIOCore
import NIOPosix
import PushSimulator
import Synchronization

// Accepts and foreign answers are the shared simulator's types: importers of FCMSimulator use them as its own.
@_exported import struct PushSimulator.SimulatorAccept
@_exported import struct PushSimulator.SimulatorForeignAnswer

/// An FCM HTTP v1-compatible server for tests, demos and benchmarks. On one port it speaks cleartext HTTP/2 with
/// prior knowledge (what Paperboy's client uses) and HTTP/1.1 (the Firebase Admin SDK for Python, `curl`), told
/// apart by the client's first bytes, and serves:
///
/// - `POST /token`: Google's OAuth2 token endpoint for service accounts (RS256 JWT-bearer assertions), issuing
///   expiring access tokens and counting fetches per account;
/// - `POST /v1/projects/{project}/messages:send`: FCM's send, checked as FCM does (``FCMMessageValidator``, the
///   bearer token and its project), answered with FCM's statuses and error bodies, with faults on demand;
/// - `/control/…`: stats, the ledger and faults for processes (see `docs/fcm-simulator.md`).
public final class FCMSimulator: Sendable {
    public struct Configuration: Sendable {
        public var host: String
        /// 0 picks a free port.
        public var port: Int
        public var faults: Faults
        /// Service accounts whose assertions the token endpoint accepts (more with ``FCMSimulator/trust(_:)``).
        public var serviceAccounts: [FCMSimulator.ServiceAccount]
        /// How long an access token is valid (Google: one hour).
        public var tokenLifetime: Duration = .seconds(3600)
        /// Registration tokens starting with one of these are iOS devices: their data-only messages need
        /// `apns-priority: 5`. More can be named one by one with ``FCMSimulator/markIOS(tokens:)``.
        public var iosTokenPrefixes: [String] = []
        /// Keep the per-target ledger (entries with message bodies) and every accept with its connection and stream;
        /// turn off for big benchmarks.
        public var recordsLedger: Bool = true
        public var eventLoopThreads: Int = System.coreCount
        /// The wall clock for token lifetimes, assertion times, quotas and the ledger; tests inject their own.
        public var now: @Sendable () -> Date = { Date() }
        /// Called for every message accepted for a registration token (not for `validate_only` requests,
        /// topics or conditions), after its answer is decided and before it goes out, like the APNs
        /// simulator's `onAccept`: simulated devices act on it. Keep it quick: it runs on an event loop.
        public var onAccept: (@Sendable (Delivery) -> Void)?

        public init(serviceAccounts: [FCMSimulator.ServiceAccount] = [], faults: Faults = .init(), host: String = "127.0.0.1", port: Int = 0) {
            self.serviceAccounts = serviceAccounts
            self.faults = faults
            self.host = host
            self.port = port
        }
    }

    public let configuration: Configuration
    let state: Mutex<FCMSimulatorState>
    let iosTokens: FCMIOSTokens
    private let validator: FCMMessageValidator
    private let listener = SimulatorListener()

    /// - Throws: ``FCMSimulator.ServiceAccount/InvalidFile`` when a configured account's key does not parse.
    public init(configuration: Configuration) throws {
        self.configuration = configuration
        var state = FCMSimulatorState(faults: configuration.faults, recordsLedger: configuration.recordsLedger, now: configuration.now())
        for account in configuration.serviceAccounts {
            do {
                try state.verifier.trust(account)
            } catch {
                throw FCMSimulator.ServiceAccount.InvalidFile(description: "\(account): field 'private_key' is not an RSA private key in PEM")
            }
        }
        self.state = Mutex(state)
        let iosTokens = FCMIOSTokens(prefixes: configuration.iosTokenPrefixes)
        self.iosTokens = iosTokens
        self.validator = FCMMessageValidator(isIOSToken: { iosTokens.contains($0) })
    }

    /// Binds and starts serving.
    ///
    /// - Returns: the bound port.
    @discardableResult
    public func start() async throws -> Int {
        try await listener.start(host: configuration.host, port: configuration.port, threads: configuration.eventLoopThreads) {
            [weak self] channel in
            guard let self else { return }
            let number = self.state.withLock { $0.tally.connectionAccepted() }
            try channel.pipeline.syncOperations.addHandler(FCMProtocolSniffer(simulator: self, connection: number))
        }
    }

    /// Closes the listener and every connection, and shuts down the simulator's event loops.
    public func shutdown() async throws {
        try await listener.shutdown()
    }

    /// The bound port, after ``start()``.
    public var port: Int { listener.port }

    /// `http://HOST:PORT`: the FCM endpoint (HTTP/2 with prior knowledge, or HTTP/1.1).
    public var url: String { "http://\(configuration.host):\(port)" }

    /// The token endpoint, `http://HOST:PORT/token`: the `token_uri` of the accounts it trusts.
    public var tokenURL: String { url + "/token" }

    /// The send URL of a project.
    public func sendURL(projectID: String) -> String { url + "/v1/projects/\(projectID)/messages:send" }

    /// Trusts another service account's assertions.
    public func trust(_ account: FCMSimulator.ServiceAccount) throws {
        try state.withLock { try $0.verifier.trust(account) }
    }

    /// A fresh throwaway service account (RSA-2048) of `projectID` whose `token_uri` is this simulator's token
    /// endpoint, trusted from now on. Call after ``start()`` (the URL needs the port).
    public func makeServiceAccount(projectID: String) throws -> FCMSimulator.ServiceAccount {
        let account = try FCMSimulator.ServiceAccount.generate(projectID: projectID, tokenURI: tokenURL)
        try trust(account)
        return account
    }

    /// Changes the faults; stream settings apply to connections opened afterwards.
    public func updateFaults(_ change: (inout Faults) -> Void) {
        state.withLock { state in
            let seed = state.faults.seed
            change(&state.faults)
            if state.faults.seed != seed { state.random = SplitMix64(seed: state.faults.seed) }
        }
    }

    public var faults: Faults { state.withLock { $0.faults } }

    /// Names registration tokens as iOS devices (their data-only messages need `apns-priority: 5`).
    public func markIOS(tokens: some Sequence<String>) { iosTokens.add(tokens) }

    public func stats() -> Stats { state.withLock { $0.stats } }

    /// What the simulator answered for a registration token (or `topic:NAME`, `condition:EXPR`), oldest first;
    /// empty without ``Configuration/recordsLedger``.
    public func ledger(for target: String) -> [LedgerEntry] { state.withLock { $0.ledger[target] ?? [] } }

    /// How many messages to `target` were accepted (needs ``Configuration/recordsLedger``).
    public func acceptedCount(for target: String) -> Int {
        state.withLock { $0.ledger[target]?.count { $0.outcome == "accepted" } ?? 0 }
    }

    /// A message the simulator accepted, with the connection and HTTP/2 stream it came on.
    public typealias Accept = SimulatorAccept

    /// Every accept, oldest first, each with its target, time, connection and stream (none over HTTP/1.1); empty
    /// without ``Configuration/recordsLedger``.
    public func accepts() -> [Accept] { state.withLock { $0.tally.accepts } }

    /// The accepts of one target (a registration token, `topic:NAME`), oldest first: a token accepted twice shows
    /// both, with their connections and streams.
    public func accepts(for target: String) -> [Accept] { state.withLock { $0.tally.accepts(forToken: target) } }

    /// Zeroes the stats, the ledger and the quota windows; trusted accounts, issued tokens, faults and iOS tokens stay.
    public func reset() {
        let now = configuration.now()
        state.withLock { $0.reset(now: now) }
    }

    // MARK: Requests

    /// Answers one request, whichever protocol it came on.
    func handle(_ request: FCMSimulatorRequest) -> FCMSimulatorResponse {
        let path = request.path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? request.path
        if let projectID = Self.sendProject(path), request.method == "POST" {
            let verdict: FCMMessageValidator.Verdict
            if request.bodyTooLarge {
                verdict = .invalid("Request payload size exceeds the limit: \(FCMSimulatorRequest.maximumBodyBytes) bytes.")
            } else if !(request.contentType?.lowercased().hasPrefix("application/json") ?? false) {
                verdict = .invalid("Invalid JSON payload received. Content-Type must be application/json.")
            } else {
                verdict = validator.validate(body: request.body.readableBytesView)
            }
            let now = configuration.now()
            let response = state.withLock { state in
                var response = state.send(
                    projectID: projectID,
                    authorization: request.authorization,
                    verdict: verdict,
                    body: String(buffer: request.body),
                    connection: request.connection,
                    stream: request.stream,
                    now: now
                )
                response.delay = state.faults.latency
                return response
            }
            if response.status == 200, let onAccept = configuration.onAccept, case .valid(let message) = verdict, !message.validateOnly,
                case .token = message.target, let delivery = Delivery(body: request.body.readableBytesView, acceptedAt: now)
            {
                onAccept(delivery)
            }
            return response
        }
        if path == "/token" {
            guard request.method == "POST" else { return .oauthError("invalid_request", "Use POST.", status: 405) }
            return issueToken(request)
        }
        if path.hasPrefix("/control/") { return control(request, path: path) }
        state.withLock { $0.rejectPath() }
        return .googleError(404, status: "NOT_FOUND", message: "Method not found.")
    }

    /// `/v1/projects/{project}/messages:send` → the project.
    static func sendProject(_ path: String) -> String? {
        let prefix = "/v1/projects/"
        let suffix = "/messages:send"
        guard path.hasPrefix(prefix), path.hasSuffix(suffix), path.count > prefix.count + suffix.count else { return nil }
        let project = path.dropFirst(prefix.count).dropLast(suffix.count)
        return project.contains("/") ? nil : String(project)
    }

    private func issueToken(_ request: FCMSimulatorRequest) -> FCMSimulatorResponse {
        guard request.contentType?.lowercased().hasPrefix("application/x-www-form-urlencoded") ?? false else {
            state.withLock { $0.tokenRefused("invalid_request") }
            return .oauthError("invalid_request", "Content-Type must be application/x-www-form-urlencoded")
        }
        var audiences: Set<String> = [tokenURL]
        if let host = request.host { audiences.insert("http://\(host)/token") }
        let verifier = state.withLock { $0.verifier }
        let now = configuration.now()
        switch verifier.verify(form: String(buffer: request.body), audiences: audiences, now: now) {
        case .failure(let error):
            state.withLock { $0.tokenRefused(error.error) }
            return .oauthError(error.error, error.description)
        case .success(let account):
            let (token, expiresIn) = state.withLock { $0.issueToken(to: account, lifetime: configuration.tokenLifetime, now: now) }
            return .json(200, #"{"access_token":"# + jsonString(token) + #","expires_in":"# + String(expiresIn) + #","token_type":"Bearer"}"#)
        }
    }

    // MARK: Connections

    func http1ConnectionOpened() {
        state.withLock { $0.http1Connections += 1 }
    }

    /// What happened on an HTTP/2 connection, for the stats.
    func record(_ event: SimulatorConnectionEvent) {
        state.withLock { $0.tally.record(event) }
    }

    /// The stream limit and what exceeding it earns, for a new HTTP/2 connection.
    var streamLimit: (maxConcurrentStreams: Int, action: StreamLimitAction) {
        state.withLock { ($0.faults.maxConcurrentStreams, $0.faults.streamLimitAction) }
    }

}

/// The registration tokens the simulator treats as iOS devices: by prefix (fixed) and one by one (added at run time).
final class FCMIOSTokens: Sendable {
    let prefixes: [String]
    private let tokens = Mutex<Set<String>>([])

    init(prefixes: [String]) {
        self.prefixes = prefixes.filter { !$0.isEmpty }
    }

    func add(_ more: some Sequence<String>) { tokens.withLock { $0.formUnion(more) } }

    func contains(_ token: String) -> Bool {
        prefixes.contains { token.hasPrefix($0) } || tokens.withLock { $0.contains(token) }
    }
}
