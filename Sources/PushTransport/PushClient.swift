import Logging
import NIOCore
import NIOHPACK
import Synchronization

/// Sends a provider's messages to one endpoint with one set of credentials: a pool of HTTP/2 connections
/// (``PushConnectionPool``), the credential shared by all of them, and the send–classify–retry loop that is the
/// same for every provider. What differs, the provider says (``PushProviderProtocol``): `APNsClient` and `FCMClient` are
/// this client for APNs and for FCM.
///
/// Every call ends in one outcome per delivery: it never throws, and it never returns before each delivery's fate
/// is known or known to be unknown. Many tasks may send at once; beyond the streams the server allows they wait
/// their turn. Connections open on first use. In a `ServiceGroup` the client is a `Service`: its `run()` shuts it
/// down on graceful shutdown, so list it before the services that send with it (the group stops services in
/// reverse order).
public final class PushClient<Provider: PushProviderProtocol>: Sendable {
    public typealias Configuration = Provider.Configuration
    public typealias Outcome = Provider.Outcome

    public let configuration: Configuration
    /// The provider's side: its credentials, requests and rules.
    package let provider: Provider
    private let pool: PushConnectionPool
    private let metrics: PushClientMetrics

    /// Retries due within this long of each other go out as one batch.
    static var retryResolution: Duration { .milliseconds(10) }

    /// - Parameters:
    ///   - eventLoopGroup: where connections run.
    package init(configuration: Configuration, provider: Provider, eventLoopGroup: any EventLoopGroup, logger: Logger) throws {
        self.configuration = configuration
        self.provider = provider
        self.metrics = PushClientMetrics(
            prefix: Provider.service.lowercased(),
            reasonDimension: Provider.reasonDimension,
            factory: configuration.connection.metricsFactory
        )
        self.pool = try PushConnectionPool(
            configuration: .init(service: Provider.service, endpoint: configuration.connectionEndpoint, configuration.connection),
            tls: configuration.connection.tls,
            group: eventLoopGroup,
            metrics: metrics.connections,
            logger: logger
        )
    }

    /// True while the endpoint cannot be reached (connection attempts fail, no connection is ready) or does not
    /// answer (every open connection stalled: see ``PushConnectionSettings/stalledAfter``). A sender that paces
    /// its requests waits for it instead of queueing them: queued requests all go out at once when it is back.
    public var isUnreachable: Bool { pool.isUnreachable }

    /// How long a connection with requests outstanding may answer nothing before it is stalled, now. Requests
    /// written to an endpoint that hangs are processed when it is back, about this long's worth at the sender's
    /// rate; a paced sender resuming after it waits as long.
    public var silenceLimit: Duration { Duration(pool.silenceLimit) }

    /// Sends many messages at once and reports each one's final result through `report` as soon as it is known (once
    /// per delivery, from any thread, in no particular order); returns when all are reported.
    ///
    /// `report` runs on a connection's event loop (or in the canceller, for deliveries a cancellation ends): keep it
    /// short, and never wait in it. A result is final when no retry follows it: accepted; a rejection the provider's
    /// policy does not retry (permanent, or its attempts or time used up); a refused credential that is not sent
    /// again; a fate unknown; not sent. Its latency counts from this call, retries and waits included.
    ///
    /// The batch enters the pool with one lock and one hop per connection, which is what makes a broadcast cheap.
    /// Each rejection the provider's policy retries is sent again after its own jittered backoff (or its
    /// `Retry-After`), so that a batch's retries spread out; those due within 10 ms of each other go out together
    /// (``PushRetryWave``). A refused credential is replaced and its messages sent again at once, once per call.
    /// Requests the server did not process (GOAWAY, refused stream) are sent again on another connection without
    /// counting as attempts.
    ///
    /// Cancelling the calling task ends the call quickly without losing track of anything: requests not yet
    /// written to a connection are reported at once as `notSent` (``PushTransportError/Code/cancelled``), and so are
    /// the deliveries waiting to be sent again (for the rest of their attempt's answers, a backoff, a `Retry-After`
    /// or the quota), in place of the answer the retry would have replaced; requests already written are still
    /// awaited, each reported when its answer comes or its request timeout passes, because the server may have them:
    /// their fate is never reported as `notSent`. A draining sender learns at once which deliveries were never sent.
    public func send(
        _ deliveries: [Provider.Delivery],
        reporting report: @escaping @Sendable (_ index: Int, _ result: PushResult<Outcome>) -> Void
    ) async {
        let metrics = self.metrics
        await send(deliveries, Array(deliveries.indices), attempt: 1, refreshedCredential: false, start: .now) { index, result in
            metrics.record(result.outcome.summary, nanoseconds: result.latency.nanoseconds)
            report(index, result)
        }
    }

    /// Sends many messages at once and returns their results in the same order: ``send(_:reporting:)``, whose
    /// results are gathered until the last.
    public func send(_ deliveries: [Provider.Delivery]) async -> [PushResult<Outcome>] {
        let results = PushResults<Outcome>(count: deliveries.count)
        await send(deliveries, reporting: results.set)
        return results.all()
    }

    /// Lets the requests in flight finish, fails the waiting ones as not sent, and closes the connections.
    ///
    /// In a `ServiceGroup`, `run()` does this on graceful shutdown; call it directly where there is no group, as a
    /// one-shot command does.
    public func shutdown() async {
        await pool.shutdown()
    }

    // MARK: The loop

    /// Sends the deliveries at `pending` (their positions in `deliveries`) as attempt `attempt`, then retries what
    /// the provider's policy retries; reports each final result.
    private func send(
        _ deliveries: [Provider.Delivery],
        _ pending: [Int],
        attempt: Int,
        refreshedCredential: Bool,
        start: ContinuousClock.Instant,
        report: @escaping PushPass<Outcome>.Report
    ) async {
        func notSent(_ error: PushTransportError, attempts: Int) {
            let result = PushResult(outcome: Outcome.notSent(error), latency: ContinuousClock.now - start, attempts: attempts)
            for index in pending { report(index, result) }
        }
        // A retry wave due just as its caller was cancelled: nothing of it was written.
        if Task.isCancelled { return notSent(Self.cancelled("before it was sent again"), attempts: attempt - 1) }
        let credential: String
        do {
            credential = try await provider.credential()
        } catch {
            return notSent(error, attempts: attempt - 1)
        }
        let wait = provider.admit(pending.count)
        if wait > .zero {
            do {
                try await Task.sleep(for: wait)
            } catch {
                return notSent(Self.cancelled("while it waited for the \(Provider.service) quota"), attempts: attempt - 1)
            }
        }
        let provider = self.provider
        let pass = PushPass<Outcome>(
            indices: pending,
            attempt: attempt,
            start: start,
            replacesRefusedCredential: !refreshedCredential,
            policy: { outcome, elapsed in provider.retry(after: outcome, attempt: attempt, elapsed: elapsed, random: Double.random(in: 0..<1)) },
            report: report
        )
        let held = await execute(pending.map { deliveries[$0] }, credential: credential, pass: pass)
        var retries = held.delayed.map { (position: $0.index, delay: $0.delay) }
        for retry in held.delayed { metrics.retried(retry.outcome.summary) }
        if !held.refused.isEmpty {
            if await hasFreshCredential(replacing: credential) {
                retries.append(contentsOf: held.refused.map { ($0.index, Duration.zero) })
                for refused in held.refused { metrics.retried(refused.result.outcome.summary) }
            } else {
                // No other credential to send them with: the refusals stand.
                for refused in held.refused { report(refused.index, refused.result) }
            }
        } else if held.credentialRefused {
            // The refused ones were reported as not sent when the caller was cancelled; the next call must not use
            // this credential again all the same.
            await provider.credentialRejected(credential)
        }
        guard !retries.isEmpty else { return }
        let refreshed = refreshedCredential || held.credentialRefused
        await PushRetryWave.send(
            retries,
            resolution: Self.retryResolution,
            cancelled: { positions in
                let result = PushResult(
                    outcome: Outcome.notSent(Self.cancelled("while it waited to be sent again")),
                    latency: ContinuousClock.now - start,
                    attempts: attempt
                )
                for index in positions { report(index, result) }
            },
            { positions in
                await self.send(deliveries, positions, attempt: attempt + 1, refreshedCredential: refreshed, start: start, report: report)
            }
        )
    }

    /// Tells the provider that `credential` was refused, and whether it has another one now. The messages it
    /// refused are sent again only with a new credential: an APNs provider token younger than 20 minutes is not
    /// replaced (APNs answers `TooManyProviderTokenUpdates` to more), and a token endpoint that fails now leaves
    /// nothing to send with; their rejection then stands.
    private func hasFreshCredential(replacing credential: String) async -> Bool {
        await provider.credentialRejected(credential)
        do {
            return try await provider.credential() != credential
        } catch {
            return false
        }
    }

    private static func cancelled(_ when: String) -> PushTransportError {
        PushTransportError(.cancelled, "the sender was cancelled \(when)")
    }

    // MARK: The wire

    /// One pass over the wire: each answer goes to `pass`, which reports the final ones; returns what is to be sent
    /// again. Cancelling the calling task withdraws the requests not yet written (see ``send(_:reporting:)``).
    private func execute(_ deliveries: [Provider.Delivery], credential: String, pass: PushPass<Outcome>) async -> PushPass<Outcome>.Retries {
        let parts = provider.requests(for: deliveries, credential: credential)
        let firstID = pool.makeRequestIDs(count: parts.count)
        // The set of ids is made only when the caller is cancelled: hashing every id of every batch cost more than
        // the rare withdrawal it serves.
        let ids = firstID..<(firstID + UInt64(parts.count))
        let cancellation = PushBatchCancellation()
        let pool = self.pool
        let provider = self.provider
        return await withTaskCancellationHandler {
            await withUnsafeContinuation { continuation in
                pass.begin(continuation)
                var requests: [PushWireRequest] = []
                requests.reserveCapacity(parts.count)
                let now = NIODeadline.now()
                for (position, part) in parts.enumerated() {
                    requests.append(
                        PushWireRequest(
                            id: firstID + UInt64(position),
                            headers: part.headers,
                            body: part.body,
                            enqueuedAt: now,
                            cancellation: cancellation
                        ) { result in
                            pass.finish(position, Self.outcome(of: result, provider))
                        }
                    )
                }
                guard cancellation.submit() else {
                    let error = Self.cancelled("before the request was written")
                    for request in requests { request.completion(.notSent(error)) }
                    return
                }
                pool.submit(contentsOf: requests)
                // Cancelled while the pool took them: the handler may have withdrawn before they were there.
                if cancellation.isCancelled { pool.withdraw(Set(ids)) }
            }
        } onCancel: {
            // First the pass, so that what waits for a retry is not sent again; then the pool's withdrawal, whose
            // requests the pass reports as they end.
            pass.cancel()
            if cancellation.cancel() { pool.withdraw(Set(ids)) }
        }
    }

    private static func outcome(of result: PushWireResult, _ provider: Provider) -> Outcome {
        switch result {
        case .response(let status, let headers, let body):
            provider.outcome(status: status, headers: headers, body: body)
        case .fateUnknown(let error):
            .fateUnknown(error)
        case .notSent(let error):
            .notSent(error)
        case .resend:
            // The pool resends these itself; one that reaches here was never sent.
            .notSent(PushTransportError(.connectionLost, "the request was not processed"))
        }
    }
}

/// The results of one call in its order, gathered from its reports.
private final class PushResults<Outcome: PushOutcome>: Sendable {
    private let results: Mutex<[PushResult<Outcome>?]>

    init(count: Int) {
        results = Mutex(Array(repeating: nil, count: count))
    }

    func set(_ index: Int, _ result: PushResult<Outcome>) {
        results.withLock { $0[index] = result }
    }

    /// Every delivery's result, once each was reported.
    func all() -> [PushResult<Outcome>] {
        results.withLock { $0.map { $0! } }
    }
}

/// What became of one delivery, with how long it took and how many attempts.
public struct PushResult<Outcome: PushOutcome>: Sendable, Equatable {
    public var outcome: Outcome
    /// From the call to the final answer, retries, quota waits and waiting for a stream included.
    public var latency: Duration
    /// Sends of it that the provider answered or may have seen; resends of unprocessed requests do not count.
    public var attempts: Int

    public init(outcome: Outcome, latency: Duration, attempts: Int) {
        self.outcome = outcome
        self.latency = latency
        self.attempts = attempts
    }
}
