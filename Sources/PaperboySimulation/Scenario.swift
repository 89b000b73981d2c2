import Foundation
import PaperboyCore
import PaperboyDispatch

/// What one seed simulates: the workers, the apps and their fleets, the broadcasts, and the production week's faults,
/// all drawn from the seed, so that the seed alone replays it.
public struct Scenario: Sendable, CustomStringConvertible {
    public struct App: Sendable {
        public var id: Int
        public var providers: Set<PushProvider>
        public var devices: Int
        /// The share of devices whose app was uninstalled (`410 Unregistered`: per-device truth).
        public var uninstalled: Double
        /// The share of stray tokens the provider calls not valid for the app (a debug build's): per-device truth too.
        public var strayInvalid: Double

        public init(id: Int, providers: Set<PushProvider>, devices: Int, uninstalled: Double, strayInvalid: Double) {
            self.id = id
            self.providers = providers
            self.devices = devices
            self.uninstalled = uninstalled
            self.strayInvalid = strayInvalid
        }
    }

    public struct Broadcast: Sendable {
        public var id: UUID
        public var app: Int
        /// Seconds after the run's start.
        public var start: TimeInterval
        public var rate: Double
        public var cohorts: Int
        public var slot: TimeInterval
        public var origin: Int?
        /// Background waves at most (`maxPushesPerDevice`), and their interval: the follow-ups go to the devices that
        /// posted no receipt (``WavePolicy``, run by the real ``WaveDriver``).
        public var waves = 1
        public var waveInterval: TimeInterval = 1800
        /// Seconds from its start to the edition's deadline.
        public var deadline: TimeInterval = 3600
        /// `--alert-last-resort`: after the last background wave, the alert wave to the readers who allow alerts and
        /// still have no edition.
        public var alertLastResort = false

        public init(id: UUID, app: Int, start: TimeInterval, rate: Double, cohorts: Int, slot: TimeInterval, origin: Int?) {
            self.id = id
            self.app = app
            self.start = start
            self.rate = rate
            self.cohorts = cohorts
            self.slot = slot
            self.origin = origin
        }
    }

    public enum Fault: Sendable, CustomStringConvertible {
        /// SIGKILL.
        case kill(worker: Int, at: TimeInterval)
        /// SIGSTOP for `seconds`, then SIGCONT.
        case pause(worker: Int, at: TimeInterval, seconds: TimeInterval)
        /// SIGTERM (a deploy): the worker drains and exits; a new worker starts `restartAfter` later.
        case deploy(worker: Int, at: TimeInterval, restartAfter: TimeInterval)
        /// The worker never had the app's key (a pod without its secret mount).
        case keyless(worker: Int, app: Int)
        /// The app's key rotated on every worker at `at` (the old file removed); Apple revokes the old one at `revokeAt`.
        case rotate(app: Int, provider: PushProvider, at: TimeInterval, revokeAt: TimeInterval)
        /// The app is misconfigured at the provider from `at` (a wrong bundle id, another project): every device
        /// answers "not valid for this app"; an operator fixes it and releases the hold at `fixAt`.
        case misconfigure(app: Int, provider: PushProvider, at: TimeInterval, fixAt: TimeInterval)
        /// The app's topic is one its key may not send to (APNs' `TopicDisallowed`), or its APNs credentials at Firebase
        /// are wrong (FCM's `THIRD_PARTY_AUTH_ERROR`), from `at`: every push of it answers so, whatever the device; an
        /// operator fixes it at `fixAt`.
        case misconfigureTopic(app: Int, provider: PushProvider, at: TimeInterval, fixAt: TimeInterval)
        /// The provider answers nothing and takes no connection.
        case providerOutage(at: TimeInterval, seconds: TimeInterval)
        /// The provider takes every request and answers that it is unavailable (APNs' `503 ServiceUnavailable`,
        /// FCM's `UNAVAILABLE`): Apple's and Google's outages last minutes.
        case providerFailing(at: TimeInterval, seconds: TimeInterval)
        /// The provider answers a `share` of the requests that it is overloaded (APNs' `429 TooManyRequests`, FCM's
        /// `QUOTA_EXCEEDED`: another sender of the same project, a storm of retries): the rest go through.
        case providerThrottling(at: TimeInterval, seconds: TimeInterval, share: Double)
        /// The database answers every call with an error.
        case databaseOutage(at: TimeInterval, seconds: TimeInterval)
        /// An operator cancels the broadcast.
        case cancel(broadcast: Int, at: TimeInterval)
        /// NTP steps the worker's wall clock by `seconds` (its monotonic clock does not move): a VM resumed, a clock
        /// corrected for the first time after boot.
        case clockStep(worker: Int, at: TimeInterval, seconds: TimeInterval)
        /// The provider closes every connection at once (a GOAWAY or a reset while it fails over): the pushes written
        /// and not yet answered are answered by nobody (their fate unknown, processed or not), and new ones wait
        /// `seconds` for a new connection.
        case connectionsReset(at: TimeInterval, seconds: TimeInterval)
        /// Most of the app's tokens through the provider are really invalid (an import of another app's tokens, a
        /// Firebase project migration that left old-project tokens): a `share` of them answers "not valid" from the
        /// start. The breaker holds the provider; at `confirmAt` an operator runs `apps confirm-deactivations`, the
        /// runbook's way out.
        case importedTokens(app: Int, provider: PushProvider, share: Double, confirmAt: TimeInterval)

        public var description: String {
            switch self {
            case .kill(let worker, let at): "kill w\(worker) at \(Int(at))s"
            case .pause(let worker, let at, let seconds): "pause w\(worker) at \(Int(at))s for \(Int(seconds))s"
            case .deploy(let worker, let at, let restart): "deploy w\(worker) at \(Int(at))s, restart after \(Int(restart))s"
            case .keyless(let worker, let app): "w\(worker) without app \(app)'s key"
            case .rotate(let app, let provider, let at, let revokeAt):
                "rotate app \(app) \(provider.rawValue) at \(Int(at))s, revoke at \(Int(revokeAt))s"
            case .misconfigure(let app, let provider, let at, let fixAt):
                "misconfigure app \(app) \(provider.rawValue) at \(Int(at))s, fix at \(Int(fixAt))s"
            case .misconfigureTopic(let app, let provider, let at, let fixAt):
                "topic disallowed for app \(app) \(provider.rawValue) at \(Int(at))s, fix at \(Int(fixAt))s"
            case .providerOutage(let at, let seconds): "provider outage at \(Int(at))s for \(Int(seconds))s"
            case .providerFailing(let at, let seconds): "provider answering 503 at \(Int(at))s for \(Int(seconds))s"
            case .providerThrottling(let at, let seconds, let share):
                "provider answering 429 to \(Int(share * 100)) % at \(Int(at))s for \(Int(seconds))s"
            case .databaseOutage(let at, let seconds): "database outage at \(Int(at))s for \(Int(seconds))s"
            case .cancel(let broadcast, let at): "cancel broadcast \(broadcast) at \(Int(at))s"
            case .clockStep(let worker, let at, let seconds): String(format: "w%d's clock stepped %+.2fs at %ds", worker, seconds, Int(at))
            case .connectionsReset(let at, let seconds): "provider connections reset at \(Int(at))s, \(String(format: "%.1f", seconds))s to reconnect"
            case .importedTokens(let app, let provider, let share, let confirmAt):
                "app \(app) \(provider.rawValue): \(Int(share * 100)) % of tokens invalid, confirmed at \(Int(confirmAt))s"
            }
        }

        /// The fault's kind, for coverage counts.
        public var kind: String {
            switch self {
            case .kill: "kill"
            case .pause: "pause"
            case .deploy: "deploy"
            case .keyless: "keyless"
            case .rotate: "rotate"
            case .misconfigure: "misconfigure"
            case .misconfigureTopic: "misconfigureTopic"
            case .providerOutage: "providerOutage"
            case .providerFailing: "providerFailing"
            case .providerThrottling: "providerThrottling"
            case .databaseOutage: "databaseOutage"
            case .cancel: "cancel"
            case .clockStep: "clockStep"
            case .connectionsReset: "connectionsReset"
            case .importedTokens: "importedTokens"
            }
        }
    }

    public var seed: UInt64
    public var workers: Int
    /// Each worker's wall clock minus the database's, at the start.
    public var clockSkews: [TimeInterval]
    /// How fast each worker's clocks run against the database's: 1e-4 gains 0.1 ms a second (an undisciplined
    /// clock; an NTP-disciplined one stays within a few parts per million).
    public var clockDrifts: [Double]
    public var apps: [App]
    public var broadcasts: [Broadcast]
    /// The shared content origin's capacity, when some broadcasts share one.
    public var originCapacity: Double?
    public var faults: [Fault]
    /// Per database write: the change is committed but its answer lost.
    public var lostCommitChance: Double
    /// The readers: the share of devices that never post a receipt (the app killed, the phone offline), and of the
    /// others' receipts, the share that arrive late (minutes after the push: after the next wave was counted).
    public var silentShare: Double
    public var lateReceiptShare: Double
    /// Each app's broadcasts' `dormantAfter` (0 in a quarter of the apps: nobody left out), and the share of its
    /// devices with pushes of earlier mornings counted (`device_pushes`: up to four editions unanswered in a row,
    /// dormant when that reached `dormantAfter`).
    public var dormantAfter: [Int: Int] = [:]
    public var historyShare: Double = 0
    /// The share of devices whose app registers them again during the run (an app update, a changed setting): a
    /// registration revives a dormant device (`RegisterDevice`). 0 in half the runs.
    public var registerAgainShare: Double = 0
    /// The share of readers who allow alerts, and of those the shares asking for edition alerts and for the ready alert.
    public var alertShares: (authorized: Double, editionAlerts: Double, notifyWhenReady: Double) = (0, 0, 0)
    /// Per push: never written (a connection lost before it), and written with no answer.
    public var notSentChance: Double
    public var fateUnknownChance: Double

    /// The scenario of `seed`.
    public init(seed: UInt64) {
        var random = SimulationRandom(seed: seed)
        self.seed = seed
        let workers = random.int(2...4)
        self.workers = workers
        clockSkews = (0..<workers).map { _ in random.chance(0.3) ? random.between(-2...2) : 0 }
        let apps = (1...random.int(1...2)).map { id in
            let providers: Set<PushProvider> =
                switch random.int(0...3) {
                case 0: [.apns]
                case 1: [.fcm]
                default: [.apns, .fcm]
                }
            return App(
                id: id,
                providers: providers,
                devices: random.int(20...200),
                uninstalled: random.chance(0.5) ? random.between(0...0.05) : 0,
                strayInvalid: random.chance(0.4) ? random.between(0...0.03) : 0
            )
        }
        self.apps = apps
        let shared = random.chance(0.3)
        originCapacity = shared ? random.between(20...80) : nil
        let broadcasts = (0..<random.int(1...3)).map { index in
            let app = apps[random.int(0...(apps.count - 1))]
            return Broadcast(
                id: Self.broadcastID(seed: seed, index: index),
                app: app.id,
                start: random.between(0...30),
                rate: Self.rate(devices: app.devices, random: &random),
                cohorts: random.int(1...8),
                slot: random.between(0.5...4),
                origin: shared && random.chance(0.7) ? 1 : nil
            )
        }
        self.broadcasts = broadcasts
        var faults: [Fault] = []
        for _ in 0..<random.int(0...4) {
            let at = random.between(0...60)
            let worker = random.int(0...(workers - 1))
            let app = apps[random.int(0...(apps.count - 1))]
            let provider = app.providers.sorted { $0.rawValue < $1.rawValue }[random.int(0...(app.providers.count - 1))]
            switch random.int(0...11) {
            case 0: faults.append(.kill(worker: worker, at: at))
            case 1: faults.append(.pause(worker: worker, at: at, seconds: random.chance(0.5) ? random.between(1...10) : random.between(25...90)))
            case 2: faults.append(.deploy(worker: worker, at: at, restartAfter: random.between(1...20)))
            case 3: faults.append(.keyless(worker: worker, app: app.id))
            case 4: faults.append(.rotate(app: app.id, provider: provider, at: at, revokeAt: at + random.between(-20...120)))
            case 5:
                // Fixed within minutes, or noticed only after the held deactivations' ten minutes (a small or slowly
                // paced app that tripped no worker's guard raises no hold and no alert: nobody is told).
                let fixAt = at + (random.chance(0.3) ? random.between(700...1400) : random.between(20...400))
                if random.chance(0.7) {
                    faults.append(.misconfigure(app: app.id, provider: provider, at: at, fixAt: fixAt))
                } else {
                    faults.append(.misconfigureTopic(app: app.id, provider: provider, at: at, fixAt: fixAt))
                }
            case 6:
                switch random.int(0...2) {
                case 0: faults.append(.providerOutage(at: at, seconds: random.between(2...90)))
                case 1:
                    faults.append(.providerFailing(at: at, seconds: random.chance(0.7) ? random.between(2...120) : random.between(120...1200)))
                default:
                    faults.append(.providerThrottling(at: at, seconds: random.between(5...300), share: random.between(0.2...1)))
                }
            case 7: faults.append(.databaseOutage(at: at, seconds: random.between(1...40)))
            case 8: faults.append(.cancel(broadcast: random.int(0...(broadcasts.count - 1)), at: at))
            case 9:
                let seconds = random.between(0.1...5)
                faults.append(.clockStep(worker: worker, at: at, seconds: random.chance(0.5) ? seconds : -seconds))
            case 10: faults.append(.connectionsReset(at: at, seconds: random.between(0.05...3)))
            default:
                let confirmAt = at + random.between(30...400)
                faults.append(.importedTokens(app: app.id, provider: provider, share: random.between(0.5...0.95), confirmAt: confirmAt))
            }
        }
        // The runbook's confirm is for tokens that really are invalid: not drawn for a provider misconfigured at the
        // same time (the operator's fix of the configuration, a release, is that fault's own way out).
        let misconfigured = Set(
            faults.compactMap { fault -> AppProvider? in
                switch fault {
                case .misconfigure(let app, let provider, _, _), .misconfigureTopic(let app, let provider, _, _):
                    AppProvider(appID: app, provider: provider)
                default: nil
                }
            }
        )
        faults.removeAll { fault in
            guard case .importedTokens(let app, let provider, _, _) = fault else { return false }
            return misconfigured.contains(AppProvider(appID: app, provider: provider))
        }
        self.faults = faults
        clockDrifts = (0..<workers).map { _ in random.between(-2e-4...2e-4) }
        lostCommitChance = random.chance(0.3) ? 0.05 : 0
        notSentChance = random.chance(0.5) ? random.between(0...0.02) : 0
        fateUnknownChance = random.chance(0.5) ? random.between(0...0.01) : 0
        // The morning after wave 1, from a stream of its own: the draws above stay what they were before follow-up
        // waves were simulated.
        var morning = SimulationRandom(seed: seed ^ 0x3A7E5)
        for index in self.broadcasts.indices {
            let waves = morning.int(1...3)
            self.broadcasts[index].waves = waves
            self.broadcasts[index].waveInterval = morning.between(60...300)
            // Most editions leave room for every wave; one in five has its deadline during the last ones.
            let room = Double(waves) * self.broadcasts[index].waveInterval
            self.broadcasts[index].deadline = morning.chance(0.2) ? morning.between(60...max(61, room)) : 3600
        }
        silentShare = morning.between(0.05...0.6)
        lateReceiptShare = morning.chance(0.5) ? morning.between(0...0.3) : 0
        // A fault in a follow-up wave (the faults above fall in the first minute, in wave 1): two runs in five.
        if let later = self.broadcasts.first(where: { $0.waves > 1 }), morning.chance(0.4) {
            let at = later.start + later.waveInterval + morning.between(0...60)
            let worker = morning.int(0...(workers - 1))
            switch morning.int(0...6) {
            case 0: self.faults.append(.kill(worker: worker, at: at))
            case 1: self.faults.append(.pause(worker: worker, at: at, seconds: morning.between(1...90)))
            case 2: self.faults.append(.deploy(worker: worker, at: at, restartAfter: morning.between(1...20)))
            case 3: self.faults.append(.providerFailing(at: at, seconds: morning.between(2...300)))
            case 4: self.faults.append(.databaseOutage(at: at, seconds: morning.between(1...40)))
            case 5: self.faults.append(.connectionsReset(at: at, seconds: morning.between(0.05...3)))
            default: self.faults.append(.cancel(broadcast: self.broadcasts.firstIndex { $0.id == later.id } ?? 0, at: at))
            }
        }
        // Earlier mornings, from a stream of their own again.
        var history = SimulationRandom(seed: seed ^ 0xD0A7)
        for app in apps { dormantAfter[app.id] = history.chance(0.25) ? 0 : history.int(1...3) }
        historyShare = history.between(0.2...0.9)
        // Registrations during the run, from a stream of their own.
        var registrations = SimulationRandom(seed: seed ^ 0x2E61)
        registerAgainShare = registrations.chance(0.5) ? registrations.between(0.05...0.3) : 0
        // Alerts, from a stream of their own: which broadcasts end with the alert wave, and how many readers allow
        // alerts (`alerts_authorized`) and ask for edition alerts or the ready alert.
        var alerts = SimulationRandom(seed: seed ^ 0xA1E27)
        for index in self.broadcasts.indices { self.broadcasts[index].alertLastResort = alerts.chance(0.4) }
        alertShares = (authorized: alerts.between(0.2...0.9), editionAlerts: alerts.between(0...0.6), notifyWhenReady: alerts.between(0...0.6))
    }

    public var description: String {
        let apps = apps.map { "app \($0.id) \($0.providers.map(\.rawValue).sorted().joined(separator: "+")) \($0.devices) devices" }
        let broadcasts = broadcasts.enumerated().map {
            "broadcast \($0.offset) app \($0.element.app) at \(Int($0.element.start))s \(Self.rateText($0.element.rate))/s \($0.element.cohorts) cohorts"
                + ", \($0.element.waves) waves \(Int($0.element.waveInterval))s apart, deadline +\(Int($0.element.deadline))s"
                + ($0.element.alertLastResort ? ", then the alert wave" : "")
                + ($0.element.origin != nil ? " on the origin" : "")
        }
        let origin = originCapacity.map { ["origin \(Int($0))/s"] } ?? []
        let readers =
            "readers: \(Int(silentShare * 100))% never post a receipt, \(Int(lateReceiptShare * 100))% of the others late"
            + "; \(Int(historyShare * 100))% with earlier editions counted, dormant after "
            + dormantAfter.sorted { $0.key < $1.key }.map { "\($0.value) (app \($0.key))" }.joined(separator: ", ")
            + (registerAgainShare > 0 ? "; \(Int(registerAgainShare * 100))% registered again during the run" : "")
            + "; \(Int(alertShares.authorized * 100))% allow alerts, \(Int(alertShares.editionAlerts * 100))% of them edition alerts, "
            + "\(Int(alertShares.notifyWhenReady * 100))% the ready alert"
        let parts = ["seed \(seed): \(workers) workers"] + apps + broadcasts + origin + [readers] + faults.map(\.description)
        return parts.joined(separator: "; ")
    }

    /// A broadcast's rate: mostly 5 to 60 devices a second; one in five anywhere from 0.05 to 500 a second
    /// (log-uniform), as slowly as sends the app's whole fleet within 5 minutes (a hold of up to 24 minutes and the
    /// rest of the fleet still fit in the run's 30).
    static func rate(devices: Int, random: inout SimulationRandom) -> Double {
        guard random.chance(0.2) else { return random.between(5...60) }
        let slowest = max(0.05, Double(devices) / 300)
        return exp(random.between(log(slowest)...log(500)))
    }

    static func rateText(_ rate: Double) -> String { rate < 10 ? String(format: "%.2f", rate) : "\(Int(rate))" }

    /// A broadcast id that reads as its seed and index.
    static func broadcastID(seed: UInt64, index: Int) -> UUID {
        var bytes = [UInt8](repeating: 0, count: 16)
        withUnsafeBytes(of: seed.bigEndian) { for (offset, byte) in $0.enumerated() { bytes[offset] = byte } }
        bytes[15] = UInt8(index)
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9], bytes[10], bytes[11], bytes[12],
                bytes[13], bytes[14], bytes[15]
            )
        )
    }
}
