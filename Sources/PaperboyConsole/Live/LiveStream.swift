import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import PaperboyCore
import PaperboyStore
import ServiceLifecycle

/// `GET /console/broadcasts/{id}/live`: Server-Sent Events for a broadcast's page while it runs.
///
/// Every ``ConsoleConfiguration/liveInterval`` the stream asks when the broadcast was last sampled (one primary-key
/// probe of `console_snapshots`); when a new sample is there it reads that snapshot and the samples since the last
/// one (by index), renders the page's changing parts with the page's own templates, and sends them as one `update`
/// event. An `end` event follows the last update once the broadcast has ended. The stream ends after
/// ``ConsoleConfiguration/liveStreamLifetime`` (the browser reconnects by itself) and when the server stops.
extension ConsoleRoutes {
    /// What one `update` event carries: the rendered parts by name (`summary`, `charts`, `waves`) and the time of the
    /// sample they show.
    struct LiveUpdate: Encodable {
        var at: String
        var state: String
        var parts: [String: String]
    }

    @Sendable func liveStream(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        _ = try session(context)
        let id = try broadcastID(context)
        guard try await broadcasts.find(id: id, logger: context.logger) != nil else {
            throw ConsolePageError.notFound("There is no broadcast \(id.uuidString.lowercased()).")
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
                try await routes.stream(id, to: &writer, logger: logger)
                try await writer.finish(nil)
            }
        )
    }

    private func stream(_ id: UUID, to writer: inout any ResponseBodyWriter, logger: Logger) async throws {
        try await writer.write(ByteBuffer(string: "retry: 3000\n\n"))
        let started = ContinuousClock.now
        var seen: Date?
        var samples: [ConsoleSample] = []
        var quiet = 0
        while !Task.isCancelled, !Task.isShuttingDownGracefully, ContinuousClock.now - started < configuration.liveStreamLifetime {
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

    /// The model of the live partials: they read `live.…`, as the page's own model provides it.
    struct LiveParts: Sendable {
        var live: LiveModel
    }
}
