import AsyncHTTPClient
import FCMSimulator
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import PaperboyCore
import PaperboyStore
import Synchronization

/// The simulated devices of one strategy's run. They act on what the APNs and FCM simulators accepted, as the
/// app would: when the model says iOS runs the push (or, on Android, once Doze delivers the data message and
/// WorkManager runs the job), after its delay the device fetches the edition from
/// Paperboy's API (a real HTTP request), "downloads" its tier's bundles (accounted, not transferred) and
/// posts a receipt; a device that has the edition already answers `noData`.
final class SimulatedFleet: Sendable {
    /// The keys of an edition push, as `EditionPush` writes them.
    struct Payload: Decodable {
        var edition: String
        var manifest: String
        var tier: String
        /// The push's wave, which the app echoes in its receipt; nil in a message without it.
        var wave: Int?
        /// Only in the ready alert: the Notification Service Extension's limits.
        var `extension`: Limits?

        struct Limits: Decodable {
            var seconds: Double
        }

        init(edition: String, manifest: String, tier: String, wave: Int?) {
            self.edition = edition
            self.manifest = manifest
            self.tier = tier
            self.wave = wave
        }
    }

    private struct State {
        /// Pushes received so far per device, by push type: the ordinal of the next one.
        var received: [String: [Int: Int]] = [:]
        var holding: Set<Int> = []
        var pending = 0
        var pushes: [DemoRecording.Push] = []
        var requestsFailed = 0
        /// Ready alerts received, and the devices whose extension fetched the small tier in time.
        var readyAlerts = 0
        var readyHeld = 0
        /// Android devices: when the message Doze holds for the device is delivered (seconds after the
        /// morning's start). A newer message with the same collapse key replaces a held one, so it runs once.
        var androidHeldUntil: [Int: TimeInterval] = [:]
        var collapsed = 0
        /// Pending Android devices (a subset of ``pending``).
        var androidPending = 0
        /// The pending devices' tasks, by a running number: ``stop()`` cancels them.
        var tasks: [Int: Task<Void, Never>] = [:]
        var nextTask = 0
        var stopped = false
        /// The readers' opens reported so far (the demo's own view: held or not when the reader looked), and how many
        /// of the morning's opens that is.
        var opens: [DemoRecording.Open] = []
    }

    let model: FleetModel
    let tokenIndex: [String: Int]
    /// iOS tokens (hex) and then Android tokens (FCM registration tokens).
    let tokens: [String]
    /// The index of the first Android device.
    let androidStart: Int
    let clock: DemoClock
    let http: HTTPClient
    let apiBase: String
    let apiKey: String
    let logger: Logger
    private let state = Mutex(State())

    init(
        model: FleetModel,
        tokens: [String],
        androidStart: Int,
        clock: DemoClock,
        http: HTTPClient,
        apiBase: String,
        apiKey: String,
        logger: Logger
    ) {
        self.model = model
        self.tokens = tokens
        self.androidStart = androidStart
        self.tokenIndex = Dictionary(uniqueKeysWithValues: tokens.enumerated().map { ($0.element, $0.offset) })
        self.clock = clock
        self.http = http
        self.apiBase = apiBase
        self.apiKey = apiKey
        self.logger = logger
    }

    /// Device actions scheduled or under way.
    var pending: Int { state.withLock { $0.pending } }
    var pushes: [DemoRecording.Push] { state.withLock { $0.pushes } }
    var holding: Int { state.withLock { $0.holding.count } }
    var requestsFailed: Int { state.withLock { $0.requestsFailed } }
    /// Ready alerts received, and devices whose Notification Service Extension fetched the small tier.
    var readyAlerts: (received: Int, held: Int) { state.withLock { ($0.readyAlerts, $0.readyHeld) } }
    /// Android messages that replaced one Doze still held (same collapse key).
    var collapsed: Int { state.withLock { $0.collapsed } }
    /// Whether every pending device is an Android device (waiting for a Doze maintenance window, or running
    /// the job one opened): their runs are spread over the windows' random phases, so demo time may run
    /// faster without bunching them at the API.
    var onlyAndroidLeft: Bool { state.withLock { $0.pending == $0.androidPending } }

    /// The opens reported so far.
    var opens: [DemoRecording.Open] { state.withLock { $0.opens } }

    /// Readers opening the app: one task walks the morning's opens (sorted by time) and reports each through the API
    /// (`POST /v1/devices/{token}/opens`) when its time comes, noting whether the device held the edition then. The
    /// reports are not counted in ``pending``: a run ends when the broadcast and the devices' downloads have, and the
    /// opens left then are reported by ``openReported(_:)``'s caller.
    func startOpens(_ opens: [(device: Int, at: Date)]) {
        state.withLock { state in
            guard !state.stopped else { return }
            let id = state.nextTask
            state.nextTask += 1
            state.tasks[id] = Task {
                for open in opens {
                    do { try await clock.sleep(until: open.at) } catch { return }
                    let reported = self.state.withLock { state -> Bool in
                        guard !state.stopped else { return false }
                        state.opens.append(
                            DemoRecording.Open(device: open.device, at: open.at.timeIntervalSince1970, held: state.holding.contains(open.device))
                        )
                        let request = state.nextTask
                        state.nextTask += 1
                        state.tasks[request] = Task {
                            defer { self.state.withLock { $0.tasks[request] = nil } }
                            do {
                                try await self.postOpen(token: self.tokens[open.device])
                            } catch {
                                guard !self.state.withLock({ $0.stopped }) else { return }
                                self.state.withLock { $0.requestsFailed += 1 }
                                self.logger.debug(
                                    "a simulated open report failed",
                                    metadata: [LogKey.device: "\(open.device)", LogKey.error: "\(error)"]
                                )
                            }
                        }
                        return true
                    }
                    if !reported { return }
                }
            }
        }
    }

    /// Notes an open the runner reported itself, after the run (nothing could change whether the device held the
    /// edition any more).
    func openReported(device: Int, at: Date) {
        state.withLock { $0.opens.append(DemoRecording.Open(device: device, at: at.timeIntervalSince1970, held: $0.holding.contains(device))) }
    }

    private func postOpen(token: String) async throws {
        var request = HTTPClientRequest(url: apiBase + "/v1/devices/\(token)/opens")
        request.method = .POST
        request.headers.add(name: "X-API-Key", value: apiKey)
        let response = try await http.execute(request, timeout: .seconds(120))
        _ = try await response.body.collect(upTo: 1 << 16)
        guard response.status.code == 204 else { throw DemoError("POST opens answered \(response.status.code)") }
    }

    /// A push arrived at device `token` at wall-clock `acceptedAt`.
    func receive(token: String, pushType: String, payload: [UInt8], acceptedAt: Date) {
        guard let index = tokenIndex[token], let push = try? JSONDecoder().decode(Payload.self, from: Data(payload)) else { return }
        let arrived = clock.demoTime(acceptedAt)
        let ready = push.extension != nil
        // A ready alert counts apart: its extension runs on its own terms, not iOS's background budget.
        let kind = ready ? "ready" : pushType
        let ordinal = state.withLock { state -> Int in
            let ordinal = state.received[kind, default: [:]][index, default: 0]
            state.received[kind, default: [:]][index] = ordinal + 1
            state.pushes.append(DemoRecording.Push(device: index, at: arrived.timeIntervalSince1970, pushType: kind))
            if ready { state.readyAlerts += 1 }
            return ordinal
        }
        let reaction =
            ready ? model.readyAlertReaction(device: index, ordinal: ordinal) : model.reaction(device: index, pushType: pushType, ordinal: ordinal)
        guard case .runs(let delay, let download) = reaction else { return }
        schedule(index, push: push, arrived: arrived, delay: delay, download: download)
    }

    /// A data message the FCM simulator accepted for an Android device.
    func receive(android delivery: FCMSimulator.Delivery) {
        guard let index = tokenIndex[delivery.token], index >= androidStart, let edition = delivery.data["edition"],
            let manifest = delivery.data["manifest"], let tier = delivery.data["tier"]
        else { return }
        let push = Payload(edition: edition, manifest: manifest, tier: tier, wave: delivery.data["wave"].flatMap { Int($0) })
        let arrived = clock.demoTime(delivery.acceptedAt)
        let arrival = arrived.timeIntervalSince(clock.origin)
        let highPriority = delivery.android?.priority?.lowercased() == "high"
        let expiry = delivery.android?.ttlSeconds.map { arrival + $0 } ?? .infinity
        let delivered = model.androidDevice(index).delivery(arrival: arrival, highPriority: highPriority)
        let ordinal = state.withLock { state -> Int? in
            state.pushes.append(DemoRecording.Push(device: index, at: arrived.timeIntervalSince1970, pushType: "android"))
            if let held = state.androidHeldUntil[index], held > arrival {
                state.collapsed += 1
                return nil
            }
            let ordinal = state.received["android", default: [:]][index, default: 0]
            state.received["android", default: [:]][index] = ordinal + 1
            if delivered > arrival { state.androidHeldUntil[index] = delivered }
            return ordinal
        }
        guard let ordinal,
            case .runs(let delay, let download) = model.androidReaction(
                device: index,
                arrival: arrival,
                highPriority: highPriority,
                expiry: expiry,
                ordinal: ordinal
            )
        else { return }
        schedule(index, push: push, arrived: arrived, delay: delay, download: download, android: true)
    }

    /// Runs device `index`'s app `delay` after `arrived` (an Android device's is counted in ``onlyAndroidLeft``).
    private func schedule(
        _ index: Int,
        push: Payload,
        arrived: Date,
        delay: TimeInterval,
        download: FleetModel.DownloadResult,
        android: Bool = false
    ) {
        state.withLock { state in
            guard !state.stopped else { return }
            let id = state.nextTask
            state.nextTask += 1
            state.pending += 1
            if android { state.androidPending += 1 }
            state.tasks[id] = Task {
                defer {
                    self.state.withLock {
                        $0.pending -= 1
                        if android { $0.androidPending -= 1 }
                        $0.tasks[id] = nil
                    }
                }
                do {
                    try await clock.sleep(until: arrived.addingTimeInterval(delay))
                    try await run(index, push: push, download: download, delay: delay)
                } catch {
                    // Stopped at the end of the strategy's run: not a failure.
                    guard !self.state.withLock({ $0.stopped }) else { return }
                    self.state.withLock { $0.requestsFailed += 1 }
                    logger.debug("a simulated device failed", metadata: [LogKey.device: "\(index)", LogKey.error: "\(error)"])
                }
            }
        }
    }

    /// Ends the run: devices still waiting (for a Doze window past the deadline) give up, and pushes that
    /// arrive now are ignored, so that nothing of this strategy's fleet reaches the API during the next one's.
    func stop() async {
        let tasks = state.withLock { state in
            state.stopped = true
            return Array(state.tasks.values)
        }
        for task in tasks { task.cancel() }
        for task in tasks { await task.value }
    }

    /// What the app does when iOS runs its push, `delay` after its arrival.
    private func run(_ index: Int, push: Payload, download: FleetModel.DownloadResult, delay: TimeInterval) async throws {
        let token = tokens[index]
        let context = self.context(index, push: push, delay: delay)
        guard let editionID = UUID(uuidString: push.edition) else { throw DemoError("a push named edition \(push.edition), not a UUID") }
        if state.withLock({ $0.holding.contains(index) }) {
            try await postReceipt(token: token, receipt: ReceiptReport(editionID: editionID, result: .noData, context: context))
            return
        }
        var request = HTTPClientRequest(url: apiBase + push.manifest)
        request.headers.add(name: "X-API-Key", value: apiKey)
        let response = try await http.execute(request, timeout: .seconds(120))
        let body = try await response.body.collect(upTo: 1 << 20)
        guard response.status == .ok else { throw DemoError("GET \(push.manifest) answered \(response.status.code)") }
        let bytes = Self.bytes(ofTier: push.tier, manifest: Data(body.readableBytesView))
        // Downloading takes demo time: on Wi-Fi at ~50 Mbit/s, on cellular at ~10.
        let seconds = Double(bytes) * 8 / (context.network == .wifi ? 50_000_000 : 10_000_000)
        // A Notification Service Extension that runs out of time is ended by iOS: no receipt.
        if let limits = push.extension, seconds > min(limits.seconds, model.parameters.nseTimeLimit) { return }
        try await clock.sleep(until: clock.now().addingTimeInterval(seconds))
        let receipt =
            download == .newData
            ? ReceiptReport(editionID: editionID, result: .newData, bytes: bytes, seconds: seconds, context: context)
            : ReceiptReport(editionID: editionID, result: .failed, seconds: seconds, context: context)
        try await postReceipt(token: token, receipt: receipt)
        if download == .newData {
            state.withLock {
                $0.holding.insert(index)
                if push.extension != nil { $0.readyHeld += 1 }
            }
        }
    }

    /// What the simulated app knows when it runs and sends with its receipt: the device's network and
    /// charging as the model has them for the morning, the wave echoed from the push, and (iOS) the seconds
    /// from the push's arrival; an Android device's delay includes Doze holding the message, which the app
    /// cannot see. The model has no Low Power Mode or Background App Refresh setting, so the app sends
    /// neither (a real app may).
    func context(_ index: Int, push: Payload, delay: TimeInterval) -> WakeContext {
        if index >= androidStart {
            let device = model.androidDevice(index)
            return WakeContext(network: device.onWiFi ? .wifi : .cellular, charging: device.charging, wave: push.wave)
        }
        let device = model.device(index)
        return WakeContext(
            network: device.onWiFi ? .wifi : .cellular,
            charging: device.charging,
            wave: push.wave,
            secondsFromPush: Int(delay.rounded())
        )
    }

    private func postReceipt(token: String, receipt: ReceiptReport) async throws {
        var request = HTTPClientRequest(url: apiBase + "/v1/devices/\(token)/receipts")
        request.method = .POST
        request.headers.add(name: "X-API-Key", value: apiKey)
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: try JSONEncoder().encode(receipt)))
        let response = try await http.execute(request, timeout: .seconds(120))
        _ = try await response.body.collect(upTo: 1 << 16)
        guard (200..<300).contains(response.status.code) else { throw DemoError("POST receipt answered \(response.status.code)") }
    }

    /// The bytes of a tier's bundles in an edition's JSON.
    static func bytes(ofTier tier: String, manifest: Data) -> Int64 {
        struct Edition: Decodable {
            struct Tier: Decodable {
                struct Bundle: Decodable { var bytes: Int64 }
                var bundles: [Bundle]
            }
            var tiers: [String: Tier]
        }
        guard let edition = try? JSONDecoder().decode(Edition.self, from: manifest) else { return 0 }
        return edition.tiers[tier]?.bundles.reduce(0) { $0 + $1.bytes } ?? 0
    }
}

/// The demo could not do its work.
public struct DemoError: Error, CustomStringConvertible {
    public var message: String
    init(_ message: String) { self.message = message }
    public var description: String { message }
}
