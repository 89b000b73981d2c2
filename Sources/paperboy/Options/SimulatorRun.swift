import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

/// What `apns-sim` and `fcm-sim` print of their stats: the summary table on exit and, each second, a progress line.
/// The counts both simulators keep, and the rows each keeps alone.
protocol SimulatorStats: Encodable, Sendable {
    var accepted: Int { get }
    /// By reason or code.
    var rejected: [String: Int] { get }
    var goAwaysSent: Int { get }
    var streamLimitViolations: Int { get }
    var peakConcurrentStreams: Int { get }
    var acceptsPerSecond: [Int] { get }
    /// The summary's first rows, `accepted` among them.
    var leadingRows: [(label: String, value: Int)] { get }
    /// Rows after the rejections that one simulator keeps and the other does not.
    var detailRows: [(label: String, value: Int)] { get }
    /// The progress line's third figure: connections (APNs), token fetches (FCM).
    var progressFigure: (label: String, value: Int) { get }
}

extension SimulatorStats {
    var table: String {
        var rows = leadingRows.map { ($0.label, "\($0.value)") }
        rows += rejected.sorted(by: { $0.key < $1.key }).map { ("rejected \($0.key)", "\($0.value)") }
        rows += detailRows.map { ($0.label, "\($0.value)") }
        rows += [
            ("GOAWAYs sent", "\(goAwaysSent)"),
            ("stream limit violations", "\(streamLimitViolations)"),
            ("peak concurrent streams", "\(peakConcurrentStreams)"),
            ("peak accepts/s", "\(acceptsPerSecond.max() ?? 0)"),
            ("seconds until the last accept", "\(acceptsPerSecond.count)"),
        ]
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { $0.0.padding(toLength: width + 2, withPad: " ", startingAt: 0) + $0.1 }.joined(separator: "\n") + "\n"
    }

    /// Accepted and rejected so far and in the last second, and what else shows the load.
    func progressLine(since last: Self) -> String {
        let rejectedNow = rejected.values.reduce(0, +)
        let rejectedBefore = last.rejected.values.reduce(0, +)
        return "accepted \(accepted) (+\(accepted - last.accepted)/s)  rejected \(rejectedNow) (+\(rejectedNow - rejectedBefore)/s)"
            + "  \(progressFigure.label) \(progressFigure.value)  peak streams \(peakConcurrentStreams)"
    }
}

/// A simulator as a `Service`: starts it and prints the lines that say where it listens, optionally a progress
/// line each second on standard error, and shuts it down on graceful shutdown (SIGINT or SIGTERM).
struct SimulatorService<Stats: SimulatorStats>: Service {
    /// Starts the simulator; the lines to print once it listens.
    let start: @Sendable () async throws -> [String]
    let stats: @Sendable () -> Stats
    let stop: @Sendable () async throws -> Void
    let showProgress: Bool

    func run() async throws {
        for line in try await start() { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
        await waitForShutdown()
        try await stop()
    }

    /// Until graceful shutdown, meanwhile, with ``showProgress``, writing one progress line a second.
    private func waitForShutdown() async {
        guard showProgress else {
            try? await gracefulShutdown()
            return
        }
        let stats = self.stats
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                var last = stats()
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(1))
                    let now = stats()
                    FileHandle.standardError.write(Data((now.progressLine(since: last) + "\n").utf8))
                    last = now
                }
            }
            try? await gracefulShutdown()
            group.cancelAll()
        }
    }

    /// Runs the simulator until SIGINT or SIGTERM, then prints its stats: as JSON with `json`, else as the summary
    /// table.
    func runUntilSignalled(logger: Logger, json: Bool) async throws {
        let group = ServiceGroup(configuration: .init(services: [self], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
            encoder.dateEncodingStrategy = .iso8601
            FileHandle.standardOutput.write(try encoder.encode(stats()) + Data("\n".utf8))
        } else {
            FileHandle.standardOutput.write(Data(stats().table.utf8))
        }
    }
}
