import APNsSimulator
import ArgumentParser
import AsyncHTTPClient
import Crypto
import Foundation
import Histogram
import Logging
import NIOCore
import NIOHTTP1
import PaperboyDemo
import PaperboyStore
import Synchronization
import UnixSignals

/// `paperboy-bench fleet`: an APNs simulator whose devices answer as the demo's fleet model says, with receipts
/// posted to `paperboy serve` over HTTP, one request per device, as the app does. The benchmark's stand-in for
/// Apple and the readers' phones in `scripts/bench-broadcast.sh --morning`.
struct FleetBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fleet",
        abstract: "An APNs simulator whose devices post receipts to `paperboy serve` as the demo's fleet model spreads them.",
        discussion: """
            Listens as `paperboy apns-sim` does (its first line on standard output is `apns-sim listening on URL`) and
            accepts every valid notification. Each accepted background push is a device's: the demo's fleet model
            (`paperboy demo`'s, with --seed) says whether iOS runs it (about two thirds of the fleet: power, network,
            swiped-away apps) and after what delay (log-normal, median 20 s, at most 120 s); when it runs, the device
            posts `POST /v1/devices/{token}/receipts` (newData, or failed as the model's downloads fail) to --api
            with its app's key, echoing the push's edition and wave. The device's model index is the token's first
            eight bytes, so the same token answers the same way in every run. The manifest GET a real app makes first
            is left out: the receipts are what this measures. Receipts due while --connections requests are in flight
            wait: their lag (posted - due) says whether the API kept up.

            --api-keys names a file of `BUNDLE KEY` lines (the app's bundle id, the push's apns-topic, and its
            device API key): keys stay out of the process list. A push whose topic has no key gets no receipt.

            SIGTERM or SIGINT: stops accepting, drops the receipts not yet due (counted as unsentAtStop), waits for
            those in flight, prints the stats (as `apns-sim --json` prints them, plus `fleet`) and exits 0.
            """
    )

    @Option(help: "The port to listen on (0 picks a free one).")
    var port = 0

    @Option(name: .customLong("key-file"), help: ArgumentHelp("The provider's .p8 key (or its public key, PEM).", valueName: "file"))
    var keyFile: String

    @Option(name: .customLong("key-id"), help: ArgumentHelp("The key's id (JWT kid).", valueName: "id"))
    var keyID: String

    @Option(help: ArgumentHelp("The base URL of `paperboy serve`, e.g. http://127.0.0.1:8080.", valueName: "url"))
    var api: String

    @Option(name: .customLong("api-keys"), help: ArgumentHelp("A file of `BUNDLE KEY` lines: each app's device API key.", valueName: "file"))
    var apiKeysFile: String

    @Option(help: "The fleet model's seed.")
    var seed: UInt64 = 1

    @Option(help: "Receipt requests in flight at most (HTTP/1.1 connections to --api).")
    var connections = 32

    @Option(help: "Bytes a newData receipt reports.")
    var bytes: Int64 = 52_428_800

    @Option(name: .customLong("status-file"), help: ArgumentHelp("Rewritten each second: the counts so far, as JSON.", valueName: "file"))
    var statusFile: String?

    @Flag(help: "On exit, print the stats as JSON on standard output (else a summary).")
    var json = false

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port: \(port) is not a TCP port (0-65535)") }
        guard (1...4096).contains(connections) else { throw ValidationError("--connections: must be 1 to 4096") }
        guard URL(string: api)?.host != nil else { throw ValidationError("--api: '\(api)' is not a URL such as http://127.0.0.1:8080") }
        guard bytes >= 0 else { throw ValidationError("--bytes: must not be negative") }
        _ = try apiKeys()
    }

    /// The `BUNDLE KEY` lines of --api-keys.
    func apiKeys() throws -> [String: String] {
        guard let data = FileManager.default.contents(atPath: apiKeysFile) else {
            throw ValidationError("--api-keys: \(apiKeysFile) does not exist or cannot be read")
        }
        var keys: [String: String] = [:]
        for (number, line) in String(decoding: data, as: UTF8.self).split(separator: "\n").enumerated() {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count == 2 else { throw ValidationError("--api-keys: line \(number + 1) is not `BUNDLE KEY`") }
            keys[String(fields[0])] = String(fields[1])
        }
        guard !keys.isEmpty else { throw ValidationError("--api-keys: \(apiKeysFile) names no app") }
        return keys
    }

    func run() async throws {
        LoggingSystem.bootstrapBench()
        guard let pem = FileManager.default.contents(atPath: keyFile).map({ String(decoding: $0, as: UTF8.self) }) else {
            throw ValidationError("--key-file: \(keyFile) does not exist or cannot be read")
        }
        let publicKey: P256.Signing.PublicKey
        if let key = try? P256.Signing.PrivateKey(pemRepresentation: pem) {
            publicKey = key.publicKey
        } else if let key = try? P256.Signing.PublicKey(pemRepresentation: pem) {
            publicKey = key
        } else {
            throw ValidationError("--key-file: \(keyFile) is not a PEM P-256 private key (.p8) or public key")
        }

        let fleet = ReceiptFleet(model: FleetModel(seed: seed), apiKeys: try apiKeys(), bytes: bytes)
        var configuration = APNsSimulator.Configuration(
            validation: .init(teamID: nil, keys: [keyID: publicKey], topics: nil),
            faults: .init(),
            host: "127.0.0.1",
            port: port
        )
        configuration.recordsAccepted = false
        configuration.onAccept = { fleet.receive($0) }
        let simulator = APNsSimulator(configuration: configuration)
        let http = HTTPClient(
            eventLoopGroupProvider: .singleton,
            configuration: .init(connectionPool: .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: connections))
        )
        let signals = await UnixSignalsSequence(trapping: .sigint, .sigterm)
        try await simulator.start()
        FileHandle.standardOutput.write(Data("apns-sim listening on \(simulator.url) (fleet: receipts to \(api))\n".utf8))

        let base = api.hasSuffix("/") ? String(api.dropLast()) : api
        let connections = self.connections
        let statusFile = self.statusFile
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await fleet.send(http: http, api: base, concurrency: connections) }
                group.addTask { await fleet.report(statusFile: statusFile) }
                var iterator = signals.makeAsyncIterator()
                _ = await iterator.next()
                try await simulator.shutdown()
                group.cancelAll()
                try await group.waitForAll()
            }
            try await http.shutdown()
        } catch {
            try? await http.shutdown()
            throw error
        }

        let summary = fleet.summary(simulatorStartedAt: simulator.stats().startedAt)
        if let statusFile { try fleet.writeStatus(to: statusFile) }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
            encoder.dateEncodingStrategy = .iso8601
            // apns-sim's stats, as `apns-sim --json` prints them, with the fleet's beside them.
            guard var object = try JSONSerialization.jsonObject(with: encoder.encode(simulator.stats())) as? [String: Any] else {
                throw BenchError("the simulator's stats did not encode as a JSON object")
            }
            object["fleet"] = try JSONSerialization.jsonObject(with: encoder.encode(summary))
            let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted])
            FileHandle.standardOutput.write(data + Data("\n".utf8))
        } else {
            FileHandle.standardOutput.write(Data(summary.text.utf8))
        }
    }
}

/// The devices behind the simulator: which pushes run, when their receipts are due, and the receipts' fate.
final class ReceiptFleet: Sendable {
    /// A receipt waiting for its time.
    struct Due: Sendable {
        var token: String
        var apiKey: String
        var report: ReceiptReport
        /// When the device posts it, seconds since 1970.
        var at: Double
    }

    /// The keys of an edition push the fleet reads (`EditionPush` writes them).
    private struct Payload: Decodable {
        var edition: String
        var wave: Int?
    }

    private struct State {
        /// Receipts waiting, by the whole second they are due.
        var due: [Int: [Due]] = [:]
        var pending = 0
        var accepted = 0
        var ignored: [String: Int] = [:]
        var withoutKey = 0
        var unreadable = 0
        var scheduled = 0
        var byResult: [String: Int] = [:]
        var statuses: [Int: Int] = [:]
        var transportErrors = 0
        var firstError: String?
        var unsentAtStop = 0
        /// Posted receipts per whole second of the wall clock (seconds since 1970).
        var postedPerSecond: [Int: Int] = [:]
        var lagMilliseconds = Histogram<UInt64>(highestTrackableValue: 86_400_000, numberOfSignificantValueDigits: .three)
        var payloads: [[UInt8]: (edition: UUID, wave: Int?)] = [:]
    }

    private let model: FleetModel
    private let apiKeys: [String: String]
    private let bytes: Int64
    private let state = Mutex(State())

    init(model: FleetModel, apiKeys: [String: String], bytes: Int64) {
        self.model = model
        self.apiKeys = apiKeys
        self.bytes = bytes
    }

    /// The model's device for a token: its first eight bytes (sixteen hex digits) as a non-negative index.
    static func deviceIndex(token: String) -> Int {
        let prefix = token.utf8.prefix(16)
        let value = UInt64(Substring(decoding: prefix, as: UTF8.self), radix: 16) ?? UInt64(truncatingIfNeeded: token.hashValue)
        return Int(truncatingIfNeeded: value & UInt64(Int.max))
    }

    /// A push the simulator accepted (on its event loop: cheap work only).
    func receive(_ delivery: APNsSimulator.Delivery) {
        let key = delivery.topic.flatMap { apiKeys[$0] }
        let known = state.withLock { $0.payloads[delivery.payload] }
        let push = known ?? Self.decode(delivery.payload)
        let index = Self.deviceIndex(token: delivery.token)
        // The wave's ordinal: wave 2 is the device's second push of this edition, an independent draw.
        let reaction = push.map { model.reaction(device: index, pushType: delivery.pushType, ordinal: max(0, ($0.wave ?? 1) - 1)) }
        state.withLock { state in
            state.accepted += 1
            if known == nil, let push, state.payloads.count < 256 { state.payloads[delivery.payload] = push }
            guard let push, let reaction else {
                state.unreadable += 1
                return
            }
            guard let key else {
                state.withoutKey += 1
                return
            }
            switch reaction {
            case .ignored(let reason):
                state.ignored[reason, default: 0] += 1
            case .runs(let delay, let download):
                let device = model.device(index)
                let context = WakeContext(
                    network: device.onWiFi ? .wifi : .cellular,
                    charging: device.charging,
                    wave: push.wave,
                    secondsFromPush: Int(delay.rounded())
                )
                let report =
                    download == .newData
                    ? ReceiptReport(editionID: push.edition, result: .newData, bytes: bytes, seconds: 4.5, context: context)
                    : ReceiptReport(editionID: push.edition, result: .failed, seconds: 4.5, context: context)
                let at = delivery.acceptedAt.timeIntervalSince1970 + delay
                state.due[Int(at), default: []].append(Due(token: delivery.token, apiKey: key, report: report, at: at))
                state.pending += 1
                state.scheduled += 1
            }
        }
    }

    private static func decode(_ payload: [UInt8]) -> (edition: UUID, wave: Int?)? {
        guard let push = try? JSONDecoder().decode(Payload.self, from: Data(payload)), let edition = UUID(uuidString: push.edition) else {
            return nil
        }
        return (edition, push.wave)
    }

    /// The receipts due by `now`, oldest second first.
    private func takeDue(now: Double) -> [Due] {
        state.withLock { state in
            let seconds = state.due.keys.filter { Double($0) <= now }.sorted()
            var due: [Due] = []
            for second in seconds {
                var bucket = state.due.removeValue(forKey: second) ?? []
                // Only the current second's bucket holds receipts not due yet: they go back.
                let later = bucket.partition { $0.at > now }
                due += bucket[..<later]
                if later < bucket.endIndex { state.due[second] = Array(bucket[later...]) }
            }
            return due
        }
    }

    /// Posts each receipt when it is due, at most `concurrency` at once, until cancelled; then drops the rest.
    func send(http: HTTPClient, api: String, concurrency: Int) async {
        await withTaskGroup(of: Void.self) { group in
            var inFlight = 0
            while !Task.isCancelled {
                let due = takeDue(now: Date().timeIntervalSince1970)
                if due.isEmpty {
                    try? await Task.sleep(for: .milliseconds(50))
                    continue
                }
                for (offset, receipt) in due.enumerated() {
                    if Task.isCancelled {
                        state.withLock {
                            $0.unsentAtStop += due.count - offset
                            $0.pending -= due.count - offset
                        }
                        break
                    }
                    if inFlight >= concurrency {
                        await group.next()
                        inFlight -= 1
                    }
                    group.addTask { await self.post(receipt, http: http, api: api) }
                    inFlight += 1
                }
            }
            await group.waitForAll()
        }
        state.withLock { state in
            let left = state.due.values.reduce(0) { $0 + $1.count }
            state.unsentAtStop += left
            state.pending -= left
            state.due = [:]
        }
    }

    private func post(_ receipt: Due, http: HTTPClient, api: String) async {
        let started = Date().timeIntervalSince1970
        var status: Int?
        var failure: String?
        var cancelled = false
        do {
            var request = HTTPClientRequest(url: "\(api)/v1/devices/\(receipt.token)/receipts")
            request.method = .POST
            request.headers.add(name: "X-API-Key", value: receipt.apiKey)
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try JSONEncoder().encode(receipt.report)))
            let response = try await http.execute(request, timeout: .seconds(60))
            _ = try await response.body.collect(upTo: 1 << 16)
            status = Int(response.status.code)
        } catch is CancellationError {
            // The run stopped (SIGTERM) while this one was in flight: unsent, as those not yet due.
            cancelled = true
        } catch {
            failure = "\(error)"
        }
        let lag = UInt64(max(0, (started - receipt.at) * 1000))
        state.withLock { state in
            state.pending -= 1
            if cancelled {
                state.unsentAtStop += 1
            } else if let status {
                state.statuses[status, default: 0] += 1
                state.byResult[receipt.report.result.rawValue, default: 0] += 1
                state.postedPerSecond[Int(started), default: 0] += 1
                _ = state.lagMilliseconds.record(max(1, lag))
            } else {
                state.transportErrors += 1
                if state.firstError == nil { state.firstError = failure }
            }
        }
    }

    /// Each second until cancelled: the status file; each 10 s a progress line on standard error.
    func report(statusFile: String?) async {
        var tick = 0
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(1))
            tick += 1
            if let statusFile { try? writeStatus(to: statusFile) }
            if tick % 10 == 0 {
                let s = status()
                FileHandle.standardError.write(
                    Data(
                        "fleet: accepted \(s.accepted), receipts posted \(s.posted) (\(s.statuses.filter { $0.key >= 300 }.values.reduce(0, +)) not 2xx, \(s.transportErrors) transport errors), pending \(s.pending), lag p99 \(s.lagP99Milliseconds) ms\n"
                            .utf8
                    )
                )
            }
        }
    }

    /// The counts so far.
    struct Status: Codable {
        var accepted: Int
        var scheduled: Int
        var pending: Int
        var posted: Int
        var statuses: [Int: Int]
        var transportErrors: Int
        var lagP99Milliseconds: UInt64
    }

    func status() -> Status {
        state.withLock { state in
            Status(
                accepted: state.accepted,
                scheduled: state.scheduled,
                pending: state.pending,
                posted: state.statuses.values.reduce(0, +),
                statuses: state.statuses,
                transportErrors: state.transportErrors,
                lagP99Milliseconds: state.lagMilliseconds.totalCount == 0 ? 0 : state.lagMilliseconds.valueAtPercentile(99)
            )
        }
    }

    func writeStatus(to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        try encoder.encode(status()).write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    /// What the run did, for the final report.
    struct Summary: Codable {
        var accepted: Int
        var unreadablePayloads: Int
        var withoutAPIKey: Int
        /// Pushes the model's device did not run, by reason (swipedAway, throttled).
        var ignored: [String: Int]
        var scheduled: Int
        var posted: Int
        var byResult: [String: Int]
        /// HTTP statuses of the posted receipts (201 new, 200 repeated).
        var statuses: [String: Int]
        var transportErrors: Int
        var firstError: String?
        var unsentAtStop: Int
        /// Receipts posted per second, from the simulator's first second (index 0, as its acceptsPerSecond).
        var postedPerSecond: [Int]
        var lagMilliseconds: [String: UInt64]

        var text: String {
            var lines = [
                "accepted pushes            \(accepted)",
                "ignored by the devices     \(ignored.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))",
                "receipts scheduled         \(scheduled)",
                "receipts posted            \(posted) (\(byResult.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")))",
                "HTTP statuses              \(statuses.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))",
                "transport errors           \(transportErrors)",
                "unsent at stop             \(unsentAtStop)",
                "lag (posted - due) ms      p50 \(lagMilliseconds["p50"] ?? 0), p99 \(lagMilliseconds["p99"] ?? 0), max \(lagMilliseconds["max"] ?? 0)",
            ]
            if withoutAPIKey > 0 { lines.append("pushes without a key       \(withoutAPIKey)") }
            if unreadablePayloads > 0 { lines.append("unreadable payloads        \(unreadablePayloads)") }
            if let firstError { lines.append("first transport error      \(firstError)") }
            return lines.joined(separator: "\n") + "\n"
        }
    }

    func summary(simulatorStartedAt: Date) -> Summary {
        state.withLock { state in
            let first = Int(simulatorStartedAt.timeIntervalSince1970)
            let last = state.postedPerSecond.keys.max() ?? first
            var perSecond = [Int](repeating: 0, count: max(0, last - first + 1))
            for (second, count) in state.postedPerSecond where second >= first { perSecond[second - first] += count }
            let lag = state.lagMilliseconds
            return Summary(
                accepted: state.accepted,
                unreadablePayloads: state.unreadable,
                withoutAPIKey: state.withoutKey,
                ignored: state.ignored,
                scheduled: state.scheduled,
                posted: state.statuses.values.reduce(0, +),
                byResult: state.byResult,
                statuses: Dictionary(uniqueKeysWithValues: state.statuses.map { ("\($0.key)", $0.value) }),
                transportErrors: state.transportErrors,
                firstError: state.firstError,
                unsentAtStop: state.unsentAtStop,
                postedPerSecond: perSecond,
                lagMilliseconds: lag.totalCount == 0
                    ? [:] : ["p50": lag.valueAtPercentile(50), "p99": lag.valueAtPercentile(99), "max": lag.max]
            )
        }
    }
}
