import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import PaperboyAPI
import PaperboyCore
import PaperboyStore
import ServiceLifecycle
import Synchronization

/// `GET /console/broadcasts/{id}/live`: Server-Sent Events for a broadcast's page while it runs.
///
/// Every ``ConsoleConfiguration/liveInterval`` the stream asks when the broadcast was last sampled (one primary-key
/// probe of `console_snapshots`); when a new sample is there it reads that snapshot and the samples since the last
/// one (by index), renders the page's changing parts with the page's own templates, and sends them as one `update`
/// event. An `end` event follows the last update once the broadcast has ended. Every
/// ``ConsoleConfiguration/liveSessionCheck`` it checks that its session is still good (not signed out, not past its
/// end) and otherwise sends `signed-out` and stops. The stream ends after ``ConsoleConfiguration/liveStreamLifetime``
/// (the browser reconnects by itself) and when the server stops. A session holds at most
/// ``ConsoleConfiguration/liveStreamsPerSession`` streams at once in a process, a client address
/// ``ConsoleConfiguration/liveStreamsPerAddress``, and the process at most ``ConsoleConfiguration/liveStreamsInAll``.
extension ConsoleRoutes {
    /// What one `update` event carries: the rendered parts by name (`summary`, `charts`, `waves`) and the time of the
    /// sample they show.
    struct LiveUpdate: Encodable {
        var at: String
        var state: String
        var parts: [String: String]
    }

    @Sendable func liveStream(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let session = try session(context)
        let id = try broadcastID(context)
        guard try await broadcasts.find(id: id, logger: context.logger) != nil else {
            throw ConsolePageError.notFound("There is no broadcast \(id.uuidString.lowercased()).")
        }
        let address = ClientAddress.of(request) ?? "unknown"
        if let refusal = liveStreams.open(String(session.id), address: address) {
            refused("live streams", request: request, context: context)
            var error =
                switch refusal {
                case .session:
                    ConsolePageError(
                        status: .tooManyRequests,
                        heading: "Too many live pages",
                        message: "This session has \(configuration.liveStreamsPerSession) live pages open already: close one."
                    )
                case .address:
                    ConsolePageError(
                        status: .tooManyRequests,
                        heading: "Too many live pages",
                        message: "Your address has \(configuration.liveStreamsPerAddress) live pages open already: close one."
                    )
                case .process:
                    ConsolePageError(
                        status: .serviceUnavailable,
                        heading: "Too many live pages",
                        message:
                            "This server has \(configuration.liveStreamsInAll) live pages open already: the page shows its figures without live updates; reload it later."
                    )
                }
            error.retryAfter = 30
            throw error
        }
        let logger = context.logger
        let routes = self
        return Response(
            status: .ok,
            headers: [
                .contentType: "text/event-stream; charset=utf-8",
                .cacheControl: "no-store",
                HTTPField.Name("X-Accel-Buffering")!: "no",
            ],
            body: ResponseBody { writer in
                defer { routes.liveStreams.close(String(session.id), address: address) }
                try await routes.stream(id, session: session, to: &writer, logger: logger)
                try await writer.finish(nil)
            }
        )
    }

    private func stream(_ id: UUID, session: ConsoleSession, to writer: inout any ResponseBodyWriter, logger: Logger) async throws {
        try await writer.write(ByteBuffer(string: "retry: 3000\n\n"))
        let started = ContinuousClock.now
        var checked = started
        var seen: Date?
        var samples: [ConsoleSample] = []
        var quiet = 0
        while !Task.isCancelled, !Task.isShuttingDownGracefully, ContinuousClock.now - started < configuration.liveStreamLifetime {
            if ContinuousClock.now - checked >= configuration.liveSessionCheck {
                checked = ContinuousClock.now
                guard try await stillSignedIn(session, logger: logger) else {
                    try await writer.write(ByteBuffer(string: "event: signed-out\ndata: {}\n\n"))
                    return
                }
            }
            let at = try await console.snapshotTime(broadcastID: id, logger: logger)
            if let at, at != seen {
                seen = at
                let newer = try await console.samples(broadcastID: id, since: samples.last?.at, logger: logger)
                samples += newer
                guard let snapshot = try await console.snapshots(broadcastIDs: [id], logger: logger)[id] else { break }
                let model = LiveParts(live: LiveModel(progress: snapshot.progress, samples: samples, asOf: snapshot.at, now: now, timeZone: timeZone))
                let update = LiveUpdate(
                    at: TimeText.iso(snapshot.at),
                    state: snapshot.progress.state.rawValue,
                    parts: [
                        "summary": ConsolePage.fragment("live-summary", model),
                        "charts": ConsolePage.fragment("live-charts", model),
                        "waves": ConsolePage.fragment("live-waves", model),
                    ]
                )
                let json = String(decoding: try JSONEncoder().encode(update), as: UTF8.self)
                try await writer.write(ByteBuffer(string: "event: update\ndata: \(json)\n\n"))
                if snapshot.progress.state != .running {
                    try await writer.write(ByteBuffer(string: "event: end\ndata: {}\n\n"))
                    return
                }
                quiet = 0
            } else {
                quiet += 1
                // A comment now and then keeps proxies from closing an idle stream.
                if quiet % 8 == 0 { try await writer.write(ByteBuffer(string: ": waiting for a sample\n\n")) }
            }
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: configuration.liveInterval) }
            } catch is CancellationError {
                return
            }
        }
    }

    /// Whether `session` is still good (not past its end, not signed out, its token unchanged), by the database's
    /// clock; an open live page keeps its session in use, so this renews it as a request would.
    func stillSignedIn(_ session: ConsoleSession, logger: Logger) async throws -> Bool {
        let keys = try await keyring.keys(logger: logger)
        let row = try await console.session(
            .id(session.id),
            idleTimeout: configuration.idleTimeout,
            renewAfter: ConsoleSessionMiddleware.renewAfter,
            logger: logger
        )
        return row.flatMap { ConsoleSession($0, keys: keys) } != nil
    }

    /// The model of the live partials: they read `live.…`, as the page's own model provides it.
    struct LiveParts: Sendable {
        var live: LiveModel
    }
}

/// Live streams open in this process, per session, per client address and in all: a session holds at most
/// ``perSession``, an address ``perAddress`` (signing in again gives a new session, so the cap per session alone does not
/// bound a viewer who signs in many times), and the process at most ``inAll`` (each stream probes the database every
/// ``ConsoleConfiguration/liveInterval``).
final class LiveStreamCount: Sendable {
    /// Why a stream was refused.
    enum Refusal: Equatable {
        case session
        case address
        case process
    }

    struct Counts {
        var bySession: [String: Int] = [:]
        var byAddress: [String: Int] = [:]
        var total = 0
    }

    let perSession: Int
    let perAddress: Int
    let inAll: Int
    private let streams = Mutex(Counts())

    init(perSession: Int, perAddress: Int, inAll: Int) {
        self.perSession = perSession
        self.perAddress = perAddress
        self.inAll = inAll
    }

    /// Counts one more stream of `session` from `address`; a refusal (and nothing counted) when the session, the address
    /// or the process holds its cap already.
    func open(_ session: String, address: String) -> Refusal? {
        streams.withLock { streams in
            guard streams.bySession[session, default: 0] < perSession else { return .session }
            guard streams.byAddress[address, default: 0] < perAddress else { return .address }
            guard streams.total < inAll else { return .process }
            streams.bySession[session, default: 0] += 1
            streams.byAddress[address, default: 0] += 1
            streams.total += 1
            return nil
        }
    }

    func close(_ session: String, address: String) {
        streams.withLock { streams in
            guard let open = streams.bySession[session] else { return }
            streams.bySession[session] = open > 1 ? open - 1 : nil
            if let fromAddress = streams.byAddress[address] { streams.byAddress[address] = fromAddress > 1 ? fromAddress - 1 : nil }
            streams.total -= 1
        }
    }

    /// Streams open now, of `session` (for tests).
    func count(_ session: String) -> Int { streams.withLock { $0.bySession[session, default: 0] } }

    /// Streams open now in the process.
    var total: Int { streams.withLock { $0.total } }
}
