import APNs
import FCM
import Foundation
import PaperboyBroadcast
import PaperboyCore
import PaperboyDispatch
import PaperboyStore
import PushTransport
import Testing

/// The wave policy's rules, without a database: what a running broadcast does next.
@Suite("Wave policy")
struct WavePolicyTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)
    static let interval: TimeInterval = 1800

    static func state(
        waves: [StoredWave],
        workLeft: Bool = false,
        deadlineAfter: TimeInterval = 4 * 3600,
        maxPushes: BroadcastOptions.MaxPushes = 3,
        alert: Bool = false,
        cohorts: Int = 2
    ) -> WavePolicy.State {
        WavePolicy.State(
            deadline: start.addingTimeInterval(deadlineAfter),
            options: BroadcastOptions(cohorts: cohorts, waveInterval: interval, maxPushesPerDevice: maxPushes, alertLastResort: alert),
            waves: waves,
            firstWaveCohorts: firstWave(rate: waves.first?.rate ?? 100, cohorts: cohorts),
            lastWaveHasWorkLeft: workLeft
        )
    }

    /// Wave 1's cohorts: 500 devices each at `rate` from `start`.
    static func firstWave(rate: Double, cohorts: Int = 2) -> [StaggerPlan.Cohort] {
        (try? StaggerPlan(cohortCounts: Array(repeating: 500, count: cohorts), pace: .capacity(perSecond: rate), start: start).cohorts) ?? []
    }

    static func wave(_ n: Int, kind: BroadcastProgress.Wave.Kind = .background, finished: Bool = false, rate: Double = 100) -> StoredWave {
        StoredWave(wave: n, kind: kind, start: start.addingTimeInterval(Double(n - 1) * interval), rate: rate, finished: finished)
    }

    @Test("a wave with work left goes on until the deadline, then the broadcast expires")
    func workLeft() throws {
        let running = Self.state(waves: [Self.wave(1)], workLeft: true, deadlineAfter: 600)
        #expect(try WavePolicy.next(running, now: Self.start.addingTimeInterval(599), counted: nil) == [])
        #expect(try WavePolicy.next(running, now: Self.start.addingTimeInterval(600), counted: nil) == [.expire])
    }

    @Test("a finished wave is marked; the next waits for its start, one interval after the last")
    func nextWaveWaitsForItsStart() throws {
        let done = Self.state(waves: [Self.wave(1)])
        #expect(try WavePolicy.next(done, now: Self.start.addingTimeInterval(60), counted: nil) == [.finishWave(1)])
        let marked = Self.state(waves: [Self.wave(1, finished: true)])
        #expect(try WavePolicy.next(marked, now: Self.start.addingTimeInterval(Self.interval - 1), counted: nil) == [])
        #expect(WavePolicy.nextStart(marked) == Self.start.addingTimeInterval(Self.interval))
    }

    @Test(
        "wave 1's uncounted pushes hold everything after it: no count, no wave, no end, at any time, until they are counted towards dormancy"
    )
    func pushesCountedFirst() throws {
        var state = Self.state(waves: [Self.wave(1)])
        state.firstWavePushesUncounted = true
        #expect(try WavePolicy.next(state, now: Self.start.addingTimeInterval(60), counted: nil) == [.finishWave(1), .countPushes])
        state.waves = [Self.wave(1, finished: true)]
        let counted = WavePolicy.Counts(afterWave: 1, perCohort: [.background: [300, 200]])
        for offset: TimeInterval in [60, Self.interval - 1, Self.interval + 5, 5 * 3600] {
            #expect(try WavePolicy.next(state, now: Self.start.addingTimeInterval(offset), counted: counted) == [.countPushes])
        }
        // One push a device: the broadcast completes once they are counted, not before.
        var single = Self.state(waves: [Self.wave(1, finished: true)], maxPushes: 1)
        single.firstWavePushesUncounted = true
        #expect(try WavePolicy.next(single, now: Self.start.addingTimeInterval(60), counted: nil) == [.countPushes])
        single.firstWavePushesUncounted = false
        #expect(try WavePolicy.next(single, now: Self.start.addingTimeInterval(60), counted: nil) == [.complete])
        // While wave 1 has work left, its pushes wait: the wave goes on, or expires at the deadline.
        var running = Self.state(waves: [Self.wave(1)], workLeft: true, deadlineAfter: 600)
        running.firstWavePushesUncounted = true
        #expect(try WavePolicy.next(running, now: Self.start.addingTimeInterval(599), counted: nil) == [])
        #expect(try WavePolicy.next(running, now: Self.start.addingTimeInterval(600), counted: nil) == [.expire])
    }

    @Test("at its start the next wave's audience is counted outside the lock first, then started at wave 1's rate")
    func countThenStart() throws {
        let state = Self.state(waves: [Self.wave(1, finished: true, rate: 250)])
        let now = Self.start.addingTimeInterval(Self.interval + 5)
        #expect(try WavePolicy.next(state, now: now, counted: nil) == [.count(wave: 2, kinds: [.background])])

        let counted = WavePolicy.Counts(afterWave: 1, perCohort: [.background: [300, 200]])
        let actions = try WavePolicy.next(state, now: now, counted: counted)
        let plan = try StaggerPlan(cohortCounts: [300, 200], rate: 250, following: Self.firstWave(rate: 250), shift: Self.interval)
        #expect(actions == [.startWave(wave: 2, kind: .background, plan: plan)])
        // Wave 1 sent cohort 0 in its first 2 s, cohort 1 in the next 2 s. Fewer devices at the same rate:
        // each cohort's slot is shorter and ends where wave 1's ended, an interval later, so no device goes
        // out sooner than an interval after its wave-1 push. The wave starts on the interval, not when counted.
        let wave2 = Self.start.addingTimeInterval(Self.interval)
        #expect(plan.start == wave2)
        #expect(zip(plan.cohorts.map { $0.start.timeIntervalSince(wave2) }, [0.8, 3.2]).allSatisfy { abs($0 - $1) < 1e-6 })
        #expect(zip(plan.cohorts.map { $0.end.timeIntervalSince(wave2) }, [2.0, 4.0]).allSatisfy { abs($0 - $1) < 1e-6 })
        #expect(plan.rate == 250)
    }

    @Test("with countAhead the audience is counted that long before the start, and the wave still starts on time")
    func countAhead() throws {
        var state = Self.state(waves: [Self.wave(1, finished: true, rate: 250)])
        state.countAhead = 300
        let start = Self.start.addingTimeInterval(Self.interval)
        #expect(try WavePolicy.next(state, now: start.addingTimeInterval(-301), counted: nil) == [])
        let early = start.addingTimeInterval(-300)
        #expect(try WavePolicy.next(state, now: early, counted: nil) == [.count(wave: 2, kinds: [.background])])

        let counted = WavePolicy.Counts(afterWave: 1, perCohort: [.background: [300, 200]], countedAt: early)
        #expect(try WavePolicy.next(state, now: start.addingTimeInterval(-1), counted: counted) == [], "counted, but not due yet")
        let plan = try StaggerPlan(cohortCounts: [300, 200], rate: 250, following: Self.firstWave(rate: 250), shift: Self.interval)
        #expect(try WavePolicy.next(state, now: start, counted: counted) == [.startWave(wave: 2, kind: .background, plan: plan)])

        // A count from before the window (a worker that was stopped since) is taken again.
        let stale = WavePolicy.Counts(afterWave: 1, perCohort: [.background: [300, 200]], countedAt: early.addingTimeInterval(-1))
        #expect(try WavePolicy.next(state, now: start, counted: stale) == [.count(wave: 2, kinds: [.background])])
        // Nobody left to wake: the broadcast completes without waiting for the start.
        let empty = WavePolicy.Counts(afterWave: 1, perCohort: [.background: [0, 0]], countedAt: early)
        #expect(try WavePolicy.next(state, now: early, counted: empty) == [.complete])
    }

    @Test("counts for another wave or another cohort split are taken again")
    func staleCounts() throws {
        let state = Self.state(waves: [Self.wave(1, finished: true), Self.wave(2, finished: true)])
        let now = Self.start.addingTimeInterval(2 * Self.interval)
        let old = WavePolicy.Counts(afterWave: 1, perCohort: [.background: [1, 1]])
        #expect(try WavePolicy.next(state, now: now, counted: old) == [.count(wave: 3, kinds: [.background])])
        let wrongSplit = WavePolicy.Counts(afterWave: 2, perCohort: [.background: [1, 1, 1]])
        #expect(try WavePolicy.next(state, now: now, counted: wrongSplit) == [.count(wave: 3, kinds: [.background])])
    }

    @Test("no more background waves than maxPushesPerDevice; then the broadcast completes")
    func maxPushes() throws {
        let state = Self.state(waves: [Self.wave(1, finished: true), Self.wave(2)], maxPushes: 2)
        #expect(try WavePolicy.next(state, now: Self.start.addingTimeInterval(3 * Self.interval), counted: nil) == [.finishWave(2), .complete])
    }

    @Test("an empty audience completes the broadcast")
    func emptyAudience() throws {
        let state = Self.state(waves: [Self.wave(1, finished: true)])
        let counted = WavePolicy.Counts(afterWave: 1, perCohort: [.background: [0, 0]])
        #expect(try WavePolicy.next(state, now: Self.start.addingTimeInterval(Self.interval), counted: counted) == [.complete])
    }

    @Test("a wave that would start at or after the deadline is not planned")
    func deadline() throws {
        let state = Self.state(waves: [Self.wave(1, finished: true)], deadlineAfter: Self.interval)
        #expect(try WavePolicy.next(state, now: Self.start.addingTimeInterval(10), counted: nil) == [.complete])
    }

    @Test("a wave 1 planned with nobody in it (rate 0) ends the broadcast")
    func nobodyPlanned() throws {
        let state = Self.state(waves: [Self.wave(1, rate: 0)])
        #expect(try WavePolicy.next(state, now: Self.start, counted: nil) == [.finishWave(1), .complete])
    }

    @Test("the alert last resort follows the last background wave, and is tried when the background audience is empty")
    func alertLastResort() throws {
        let afterLast = Self.state(waves: [Self.wave(1, finished: true), Self.wave(2, finished: true)], maxPushes: 2, alert: true)
        let now = Self.start.addingTimeInterval(2 * Self.interval)
        #expect(try WavePolicy.next(afterLast, now: now, counted: nil) == [.count(wave: 3, kinds: [.alert])])
        let alerts = WavePolicy.Counts(afterWave: 2, perCohort: [.alert: [0, 7]])
        guard case .startWave(3, .alert, let plan) = try WavePolicy.next(afterLast, now: now, counted: alerts).first else {
            Issue.record("no alert wave")
            return
        }
        #expect(plan.cohorts.map(\.devices) == [0, 7])

        // Background first; when nobody is left for it, the alert wave.
        let early = Self.state(waves: [Self.wave(1, finished: true)], alert: true)
        let at = Self.start.addingTimeInterval(Self.interval)
        #expect(try WavePolicy.next(early, now: at, counted: nil) == [.count(wave: 2, kinds: [.background, .alert])])
        let emptyBackground = WavePolicy.Counts(afterWave: 1, perCohort: [.background: [0, 0], .alert: [2, 0]])
        guard case .startWave(2, .alert, _) = try WavePolicy.next(early, now: at, counted: emptyBackground).first else {
            Issue.record("no alert wave after an empty background audience")
            return
        }

        // Nothing follows an alert wave.
        let afterAlert = Self.state(waves: [Self.wave(1, finished: true), Self.wave(2, kind: .alert, finished: true)], alert: true)
        #expect(try WavePolicy.next(afterAlert, now: Self.start.addingTimeInterval(3 * Self.interval), counted: nil) == [.complete])
    }

    /// Background waves 1…`count`, finished, `interval` apart.
    static func finishedWaves(_ count: Int) -> [StoredWave] {
        (1...count).map { Self.wave($0, finished: true) }
    }

    @Test("with maxPushesPerDevice auto, background waves go on past any fixed number while the next starts before the deadline")
    func autoUntilDeadline() throws {
        // Deadline 4 h after wave 1, waves 30 min apart: waves start at 0, 30, … 210 min, 8 in all.
        for sent in 1...7 {
            let state = Self.state(waves: Self.finishedWaves(sent), maxPushes: .auto)
            let start = Self.start.addingTimeInterval(Double(sent) * Self.interval)
            #expect(try WavePolicy.next(state, now: start, counted: nil) == [.count(wave: sent + 1, kinds: [.background])], "after \(sent) waves")
            let counted = WavePolicy.Counts(afterWave: sent, perCohort: [.background: [3, 4]])
            guard case .startWave(let wave, .background, let plan) = try WavePolicy.next(state, now: start, counted: counted).first else {
                Issue.record("no background wave after \(sent) waves")
                continue
            }
            #expect(wave == sent + 1)
            #expect(plan.start == start, "on the interval, counted from wave 1")
        }
        // The 9th would start at the deadline: the broadcast completes.
        let last = Self.state(waves: Self.finishedWaves(8), maxPushes: .auto)
        #expect(try WavePolicy.next(last, now: Self.start.addingTimeInterval(8 * Self.interval), counted: nil) == [.complete])
    }

    @Test("a fixed maxPushesPerDevice still stops after that many background waves, with the deadline far off")
    func fixedCapStillHolds() throws {
        let state = Self.state(waves: Self.finishedWaves(3), deadlineAfter: 24 * 3600, maxPushes: 3)
        #expect(try WavePolicy.next(state, now: Self.start.addingTimeInterval(3 * Self.interval), counted: nil) == [.complete])
        let four = Self.state(waves: Self.finishedWaves(3), deadlineAfter: 24 * 3600, maxPushes: 4)
        #expect(
            try WavePolicy.next(four, now: Self.start.addingTimeInterval(3 * Self.interval), counted: nil) == [.count(wave: 4, kinds: [.background])]
        )
    }

    @Test("with auto, the last wave that starts before the deadline may run past it: it expires at the deadline, the state that is not a failure")
    func autoLastWaveExpires() throws {
        // Deadline 100 min after wave 1: wave 4 starts at 90 min, is still sending at the deadline.
        let state = Self.state(waves: Self.finishedWaves(3) + [Self.wave(4)], workLeft: true, deadlineAfter: 100 * 60, maxPushes: .auto)
        #expect(try WavePolicy.next(state, now: Self.start.addingTimeInterval(100 * 60 - 1), counted: nil) == [])
        #expect(try WavePolicy.next(state, now: Self.start.addingTimeInterval(100 * 60), counted: nil) == [.expire])
        // Done in time: no fifth wave (it would start at 120 min), completed.
        let done = Self.state(waves: Self.finishedWaves(3) + [Self.wave(4)], deadlineAfter: 100 * 60, maxPushes: .auto)
        #expect(try WavePolicy.next(done, now: Self.start.addingTimeInterval(95 * 60), counted: nil) == [.finishWave(4), .complete])
    }

    @Test("with auto and the alert last resort, the alert takes the last slot before the deadline")
    func autoAlertTakesLastSlot() throws {
        // Deadline 100 min: slots at 0, 30, 60, 90 min; background in the first three, the alert at 90.
        let beforeLast = Self.state(waves: Self.finishedWaves(2), deadlineAfter: 100 * 60, maxPushes: .auto, alert: true)
        #expect(
            try WavePolicy.next(beforeLast, now: Self.start.addingTimeInterval(2 * Self.interval), counted: nil)
                == [.count(wave: 3, kinds: [.background, .alert])]
        )
        let lastSlot = Self.state(waves: Self.finishedWaves(3), deadlineAfter: 100 * 60, maxPushes: .auto, alert: true)
        #expect(
            try WavePolicy.next(lastSlot, now: Self.start.addingTimeInterval(3 * Self.interval), counted: nil) == [.count(wave: 4, kinds: [.alert])]
        )
    }
}

/// What happens to one target at its instant, and what an APNs answer does to the device.
@Suite("Send rules")
struct SendRulesTests {
    static let deadline = Date(timeIntervalSince1970: 1_800_003_600)
    /// A device with `recent` background pushes in the hour before `before`, 15 minutes apart from 5 minutes before it.
    static func target(recent: Int, before instant: Date = deadline - 600) -> BatchTarget {
        BatchTarget(
            deviceID: 1,
            token: .apns(DeviceToken(bytes: Array(repeating: 7, count: 32))),
            tier: .large,
            recentBackgroundPushes: (0..<recent).map { instant.addingTimeInterval(-300 - Double($0) * 900) }
        )
    }

    @Test("nothing goes out at or after the deadline")
    func deadline() {
        #expect(
            SkipRules.skipReason(
                for: Self.target(recent: 0),
                kind: .background,
                at: Self.deadline,
                deadline: Self.deadline,
                configured: { _ in true }
            )
                == .deadline
        )
        #expect(
            SkipRules.skipReason(for: Self.target(recent: 0), kind: .alert, at: Self.deadline, deadline: Self.deadline, configured: { _ in true })
                == .deadline
        )
        #expect(
            SkipRules.skipReason(
                for: Self.target(recent: 0),
                kind: .background,
                at: Self.deadline - 1,
                deadline: Self.deadline,
                configured: { _ in true }
            )
                == nil
        )
    }

    @Test("background pushes stop at the hourly budget; alerts are not budgeted")
    func hourlyBudget() {
        let early = Self.deadline - 600
        #expect(
            SkipRules.skipReason(
                for: Self.target(recent: BroadcastOptions.hourlyBudget - 1),
                kind: .background,
                at: early,
                deadline: Self.deadline,
                configured: { _ in true }
            )
                == nil
        )
        #expect(
            SkipRules.skipReason(
                for: Self.target(recent: BroadcastOptions.hourlyBudget),
                kind: .background,
                at: early,
                deadline: Self.deadline,
                configured: { _ in true }
            )
                == .hourlyBudget
        )
        #expect(SkipRules.skipReason(for: Self.target(recent: 9), kind: .alert, at: early, deadline: Self.deadline, configured: { _ in true }) == nil)
    }

    @Test("the budget is counted in the hour before the device's own send instant, not before its batch was read")
    func hourlyBudgetAtTheInstant() {
        // Read at `read`: three pushes in the hour before, the first 59 minutes earlier.
        let read = Self.deadline - 1800
        let pushes = [read - 59 * 60, read - 40 * 60, read - 20 * 60]
        let device = BatchTarget(deviceID: 1, token: Self.target(recent: 0).token, tier: .large, recentBackgroundPushes: pushes)
        #expect(device.backgroundPushes(inHourBefore: read) == 3)
        func reason(at instant: Date) -> SkipReason? {
            SkipRules.skipReason(for: device, kind: .background, at: instant, deadline: Self.deadline, configured: { _ in true })
        }
        #expect(reason(at: read) == .hourlyBudget)
        #expect(reason(at: read + 59) == .hourlyBudget)
        // Exactly an hour after the first push it has left the hour: the fourth push is due.
        #expect(reason(at: read + 60) == nil)
        #expect(device.backgroundPushes(inHourBefore: read + 90) == 2)
    }

    @Test("an FCM device of an app without an FCM service account is skipped as fcmNotConfigured, in every kind of wave; with one it is sent")
    func fcmTargetsSkipped() throws {
        let fcm = BatchTarget(
            deviceID: 2,
            token: .fcm(try FCMToken("cAbCdEfGhIj:APA91b" + String(repeating: "x", count: 134))),
            platform: .android,
            tier: .large
        )
        let early = Self.deadline - 600
        #expect(
            SkipRules.skipReason(for: fcm, kind: .background, at: early, deadline: Self.deadline, configured: { $0 != .fcm }) == .fcmNotConfigured
        )
        #expect(SkipRules.skipReason(for: fcm, kind: .alert, at: early, deadline: Self.deadline, configured: { $0 != .fcm }) == .fcmNotConfigured)
        #expect(SkipRules.skipReason(for: fcm, kind: .background, at: early, deadline: Self.deadline, configured: { _ in true }) == nil)
        #expect(SkipRules.skipReason(for: fcm, kind: .background, at: Self.deadline, deadline: Self.deadline, configured: { _ in true }) == .deadline)
        let budgetSpent = BatchTarget(
            deviceID: 3,
            token: fcm.token,
            platform: .android,
            tier: .large,
            recentBackgroundPushes: Self.target(recent: BroadcastOptions.hourlyBudget).recentBackgroundPushes
        )
        #expect(
            SkipRules.skipReason(for: budgetSpent, kind: .background, at: early, deadline: Self.deadline, configured: { _ in true }) == .hourlyBudget,
            "Android keeps the same budget"
        )
        #expect(
            SkipRules.skipReason(for: Self.target(recent: 0), kind: .background, at: early, deadline: Self.deadline, configured: { $0 != .fcm })
                == nil
        )
    }

    static func result(of outcome: some PushOutcome) -> BatchOutcome.Result {
        SendRules.answer(outcome, position: 0, generation: 1).result
    }

    @Test(
        "FCM answers: UNREGISTERED deactivates when recorded, 'not valid for this app' codes defer it, retryable and message errors do not; the code is the reason"
    )
    func fcmResults() {
        func rejected(_ status: Int, _ code: FCMErrorCode, _ message: String = "") -> BatchOutcome.Result {
            Self.result(of: FCMOutcome.rejected(FCMRejection(status: status, code: code, message: message)))
        }
        #expect(rejected(404, .unregistered) == .rejected(reason: "UNREGISTERED", deactivates: .whenRecorded))
        #expect(rejected(403, .senderIDMismatch) == .rejected(reason: "SENDER_ID_MISMATCH", deactivates: .deferred))
        #expect(
            rejected(400, .invalidArgument, FCMErrorCode.invalidTokenMessage) == .rejected(reason: "INVALID_ARGUMENT", deactivates: .deferred)
        )
        #expect(
            SendRules.answer(FCMOutcome.rejected(FCMRejection(status: 403, code: .senderIDMismatch, message: "")), position: 0, generation: 1)
                .misconfigurationHint?.contains("another Firebase project") == true
        )
        #expect(rejected(400, .invalidArgument, "Invalid JSON payload received.") == .rejected(reason: "INVALID_ARGUMENT", deactivates: nil))
        #expect(rejected(429, .quotaExceeded) == .rejected(reason: "QUOTA_EXCEEDED", deactivates: nil))
        #expect(rejected(401, .thirdPartyAuthError) == .rejected(reason: "THIRD_PARTY_AUTH_ERROR", deactivates: nil))
        func answer(_ status: Int, _ code: FCMErrorCode) -> BatchSendMachine.Answer {
            SendRules.answer(FCMOutcome.rejected(FCMRejection(status: status, code: code, message: "")), position: 0, generation: 1)
        }
        #expect(answer(429, .quotaExceeded).providerUnavailable, "over quota: sent again, never the device's outcome")
        #expect(answer(503, .unavailable).providerUnavailable)
        #expect(answer(401, .thirdPartyAuthError).appMisconfigured, "the app's APNs credentials at Firebase: the app's, not the device's")
        #expect(!answer(404, .unregistered).providerUnavailable && !answer(404, .unregistered).appMisconfigured)
        #expect(Self.result(of: FCMOutcome.accepted(name: "projects/p/messages/1")) == .accepted)
    }

    @Test(
        "410 deactivates the device from its timestamp; 'not valid for this app' answers defer it (a fleet answering them at once is a misconfiguration)"
    )
    func permanentReasons() {
        let gone = Self.deadline - 7200
        #expect(
            Self.result(of: APNsOutcome.rejected(APNsRejection(status: 410, reason: .unregistered, timestamp: gone)))
                == .rejected(reason: "Unregistered", deactivates: .at(gone))
        )
        #expect(
            Self.result(of: APNsOutcome.rejected(APNsRejection(status: 400, reason: .badDeviceToken)))
                == .rejected(reason: "BadDeviceToken", deactivates: .deferred)
        )
        #expect(
            Self.result(of: APNsOutcome.rejected(APNsRejection(status: 400, reason: .deviceTokenNotForTopic)))
                == .rejected(reason: "DeviceTokenNotForTopic", deactivates: .deferred)
        )
        // A provider-side problem says nothing about the token.
        #expect(
            Self.result(of: APNsOutcome.rejected(APNsRejection(status: 403, reason: .expiredProviderToken)))
                == .rejected(reason: "ExpiredProviderToken", deactivates: nil)
        )
        #expect(Self.result(of: APNsOutcome.accepted(apnsID: "x")) == .accepted)
        let busy = SendRules.answer(APNsOutcome.rejected(APNsRejection(status: 503, reason: .serviceUnavailable)), position: 0, generation: 1)
        #expect(busy.providerUnavailable && busy.result == .rejected(reason: "ServiceUnavailable", deactivates: nil))
        let topic = SendRules.answer(APNsOutcome.rejected(APNsRejection(status: 400, reason: .topicDisallowed)), position: 0, generation: 1)
        #expect(topic.appMisconfigured && !topic.providerUnavailable)
    }
}
