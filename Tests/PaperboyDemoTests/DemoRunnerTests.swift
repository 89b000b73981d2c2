import FCMSimulator
import Foundation
import PaperboyCore
import PaperboyDemo
import PaperboyTesting
import PostgresNIO
import Synchronization
import Testing

/// The demo end to end on a small fleet with time compressed hard: real PostgreSQL, dispatcher, APNs
/// client, simulator and HTTP API. What it records must hang together.
@Suite("Demo runner")
struct DemoRunnerTests {
    @Test("blast and waves on 400 devices: every push recorded, receipts follow pushes, waves hold at least what the blast holds")
    func smallFleet() async throws {
        try await TestDatabase.with { db in
            var configuration = DemoConfiguration()
            configuration.devices = 400
            configuration.androidShare = 0
            configuration.seed = 7
            configuration.strategies = [.blast, .waves]
            configuration.window = 10 * 60
            configuration.waveInterval = 20 * 60
            configuration.timeCompression = [.blast: 30, .waves: 400]
            let runner = DemoRunner(configuration: configuration, logger: db.logger)
            let recordings = try await runner.run(database: db.configuration) { _ in }
            #expect(recordings.map(\.strategy) == [.blast, .waves])
            let model = FleetModel(seed: 7, parameters: configuration.fleet)
            let reachable = (0..<400).filter { model.isReachable($0) }.count
            let blast = StrategyResult(recordings[0], reachable: reachable)
            let waves = StrategyResult(recordings[1], reachable: reachable)

            // The blast pushed every device once; waves (auto, 20 minutes apart, 2-hour deadline) at most six
            // times, more than the old fixed three to devices that never report (swiped-away apps), and never
            // more than 3 in an hour.
            #expect(recordings[0].pushes.count == 400)
            #expect(Set(recordings[0].pushes.map(\.device)).count == 400)
            let perDevice = Dictionary(grouping: recordings[1].pushes, by: \.device).mapValues(\.count)
            #expect(perDevice.values.allSatisfy { $0 <= 6 })
            #expect((perDevice.values.max() ?? 0) > 3)
            // The budget counts background pushes (a ready alert is shown, not run). The dispatcher applies it
            // exactly on its own clock; the simulator stamps a push when it accepts it, after the HTTP/2 round
            // trip, and at 400x a loaded machine's 25 ms there is 10 s of demo time. So a push counts towards
            // the hour it was sent in within 250 ms of real time (100 s here): a broken rule or wave spacing is
            // off by a whole wave interval.
            let transit = 0.25 * 400.0
            let background = recordings[1].pushes.filter { $0.pushType == "background" }
            for (_, times) in Dictionary(grouping: background, by: \.device) {
                let sorted = times.map(\.at).sorted()
                for (index, at) in sorted.enumerated() {
                    #expect(sorted[index...].prefix { $0 < at + 3600 - transit }.count <= 3, "at most 3 background pushes in an hour")
                }
            }
            for recording in recordings {
                // Every receipt comes from a device that got a push before it.
                let firstPush = Dictionary(recording.pushes.map { ($0.device, $0.at) }, uniquingKeysWith: min)
                for receipt in recording.receipts {
                    let pushed = try #require(firstPush[receipt.device])
                    #expect(pushed <= receipt.at)
                }
                // A device downloads after fetching the edition (a failed download may be retried later).
                let gets = recording.requests.filter { $0.route == "GET /v1/editions/{id}" && $0.status == 200 }.count
                let downloads = recording.receipts.filter { $0.result != "noData" }.count
                #expect(gets >= downloads)
                #expect(recording.requests.allSatisfy { $0.status < 400 })
            }
            // The same devices react the same way to their first push: waves add to what the blast got.
            #expect(waves.held >= blast.held)
            #expect(blast.held > 0)
            #expect(waves.pushesPerDevice > 1 && waves.pushesPerDevice <= 6)

            // The devices' receipts carry what the app knows (network, charging, seconds from the push) and echo
            // the wave of a push the device got; Paperboy's count of wakes by wave, from the ledger and those
            // receipts, has wave 1 going to every device and waking those the model ran (a failed download
            // retried later names the later wave).
            let context = try await db.client.query(
                """
                SELECT count(*), count(*) FILTER (WHERE r.network IS NOT NULL AND r.charging IS NOT NULL AND r.seconds_from_push IS NOT NULL
                    AND EXISTS (SELECT 1 FROM deliveries x WHERE x.device_id = r.device_id AND x.wave = r.wave))
                FROM receipts r JOIN devices d ON d.id = r.device_id JOIN apps a ON a.id = d.app_id WHERE a.bundle_id = 'com.example.demo.waves'
                """,
                logger: db.logger
            )
            for try await (receipts, withContext) in context.decode((Int, Int).self) {
                #expect(receipts == recordings[1].receipts.count && receipts > 0)
                #expect(withContext == receipts)
            }
            let rates = try #require(waves.wakeRatesByWave)
            let first = try #require(rates.groups.first)
            #expect(first.key == "1" && first.pushes == 400)
            #expect(rates.groups.map(\.pushes).reduce(0, +) == background.count)
            var ran = 0
            var ranAndHeld = 0
            for device in 0..<400 {
                guard case .runs(_, let download) = model.reaction(device: device, pushType: "background", ordinal: 0) else { continue }
                ran += 1
                if download == .newData { ranAndHeld += 1 }
            }
            #expect((ranAndHeld...ran).contains(first.wakes), "wave 1 woke \(first.wakes); the model ran \(ran), \(ranAndHeld) of them held")
        }
    }

    @Test("Android devices registered through the API get their messages through the FCM simulator and post receipts")
    func androidThroughFCM() async throws {
        try await TestDatabase.with { db in
            var configuration = DemoConfiguration()
            configuration.devices = 200
            configuration.androidShare = 0.5
            configuration.seed = 3
            configuration.strategies = [.blast]
            configuration.timeCompression = [.blast: 30]
            configuration.tailCompression = 2000
            let accepted = Mutex<[String: [String]]>([:])
            let androidTokens = (0..<configuration.androidDevices).map { DemoRunner.androidToken(index: $0, seed: 3) }
            configuration.inspectFCMSimulator = { simulator in
                accepted.withLock { counts in
                    for token in androidTokens { counts[token] = simulator.ledger(for: token).filter { $0.outcome == "accepted" }.compactMap(\.body) }
                }
            }
            let runner = DemoRunner(configuration: configuration, logger: db.logger)
            let recordings = try await runner.run(database: db.configuration) { _ in }
            let recording = try #require(recordings.first)
            #expect(configuration.androidDevices == 200)
            #expect(recording.devices == 400 && recording.androidDevices == 200)

            // Counted at the FCM simulator: every Android device got exactly one message, data-only at normal
            // priority with the publication as collapse key.
            let ledger = accepted.withLock { $0 }
            #expect(ledger.count == 200)
            #expect(ledger.values.allSatisfy { $0.count == 1 })
            let body = try #require(ledger.values.first?.first)
            #expect(body.contains(#""priority":"normal""#) || body.contains(#""priority":"NORMAL""#))
            #expect(body.contains(#""collapse_key":"morning""#))
            #expect(!body.contains("notification"))

            // The fleet saw the same: 200 Android pushes, on devices 200..<400; the iOS devices got theirs by APNs.
            let androidPushes = recording.pushes.filter { $0.pushType == "android" }
            #expect(androidPushes.count == 200)
            #expect(androidPushes.allSatisfy { recording.isAndroid($0.device) })
            #expect(recording.pushes.filter { !recording.isAndroid($0.device) }.count == 200)

            // Awake Android devices downloaded and posted receipts over HTTP; dozing ones waited for a window.
            let result = StrategyResult(recording, reachable: 400)
            let android = try #require(result.platform(.android))
            #expect(android.held > 0)
            let model = FleetModel(seed: 3, parameters: configuration.fleet)
            let awake = (200..<400).filter { !model.androidDevice($0).isDozing }.count
            #expect(android.held >= awake * 8 / 10)
            let firstPush = Dictionary(recording.pushes.map { ($0.device, $0.at) }, uniquingKeysWith: min)
            for receipt in recording.receipts where recording.isAndroid(receipt.device) {
                let pushed = try #require(firstPush[receipt.device])
                #expect(pushed <= receipt.at)
            }
        }
    }

    @Test("four mornings: from the fourth, swiped-away devices that never answered are dormant and get one push; pushes per device fall")
    func severalMornings() async throws {
        try await TestDatabase.with { db in
            var configuration = DemoConfiguration()
            configuration.devices = 300
            configuration.androidShare = 0
            configuration.seed = 5
            configuration.strategies = [.waves]
            configuration.days = 4
            configuration.window = 10 * 60
            configuration.timeCompression = [.waves: 600]
            let runner = DemoRunner(configuration: configuration, logger: db.logger)
            let recordings = try await runner.run(database: db.configuration) { _ in }
            #expect(recordings.map(\.day) == [1, 2, 3, 4])
            let model = FleetModel(seed: 5, parameters: configuration.fleet)
            let swipedAway = (0..<300).filter { !model.isReachable($0) }
            #expect(!swipedAway.isEmpty)
            func pushes(_ recording: DemoRecording) -> [Int: Int] { Dictionary(grouping: recording.pushes, by: \.device).mapValues(\.count) }

            // Mornings 1 to 3: nobody is dormant yet, and a swiped-away device gets every wave.
            for recording in recordings.prefix(3) {
                #expect(recording.dormant == 0)
                let perDevice = pushes(recording)
                #expect(swipedAway.allSatisfy { (perDevice[$0] ?? 0) > 1 })
            }
            // Morning 4: no receipt for 3 editions makes them dormant; wave 1's push only. A swiped-away app's
            // notification service extension still runs for a ready alert: where it posted a receipt (the
            // device asked for the alert and iOS delivered it), the device is not dormant and gets every wave.
            let answered = Set(recordings.prefix(3).flatMap { $0.receipts.map(\.device) })
            let unanswered = swipedAway.filter { !answered.contains($0) }
            let revived = swipedAway.filter { answered.contains($0) }
            #expect(swipedAway.filter { !model.notifyWhenReady($0) }.allSatisfy(unanswered.contains))
            #expect(revived.allSatisfy(model.notifyWhenReady))
            #expect(!unanswered.isEmpty)
            let fourth = recordings[3]
            #expect(fourth.dormant >= unanswered.count)
            let perDevice = pushes(fourth)
            #expect(unanswered.allSatisfy { perDevice[$0] == 1 })
            #expect(revived.allSatisfy { (perDevice[$0] ?? 0) > 1 })
            #expect(fourth.pushes.count < recordings[0].pushes.count)
        }
    }
}
