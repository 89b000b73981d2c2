import APNs
import PaperboyCore
import PushTransport
import Testing

@Suite("Retry policy")
struct APNsRetryPolicyTests {
    let policy = APNsRetryPolicy()

    @Test(
        "permanent rejections are never retried",
        arguments: [
            (400, APNsReason.badDeviceToken), (400, .deviceTokenNotForTopic), (410, .unregistered), (410, .expiredToken),
            (413, .payloadTooLarge), (403, .invalidProviderToken), (400, .badTopic), (400, .unknown("NewReason")),
        ]
    )
    func permanent(status: Int, reason: APNsReason) {
        #expect(policy.decision(afterAttempt: 1, status: status, reason: reason, elapsed: .zero, random: 0.5) == .giveUp(.permanent))
    }

    @Test(
        "429, 500 and 503 are retried with a doubling, jittered backoff",
        arguments: [
            (429, APNsReason.tooManyRequests), (500, .internalServerError), (503, .serviceUnavailable), (503, .shutdown),
            (503, .unknown("SomethingNew")),
        ]
    )
    func retried(status: Int, reason: APNsReason) {
        #expect(policy.decision(afterAttempt: 1, status: status, reason: reason, elapsed: .zero, random: 1) == .retry(after: .milliseconds(200)))
        #expect(policy.decision(afterAttempt: 2, status: status, reason: reason, elapsed: .zero, random: 1) == .retry(after: .milliseconds(400)))
        #expect(policy.decision(afterAttempt: 3, status: status, reason: reason, elapsed: .zero, random: 0) == .retry(after: .milliseconds(400)))
    }

    @Test("retries stop after the attempt limit and the total time limit")
    func bounded() {
        #expect(
            policy.decision(afterAttempt: 5, status: 503, reason: .serviceUnavailable, elapsed: .zero, random: 0.5) == .giveUp(.attemptsExhausted)
        )
        #expect(
            policy.decision(afterAttempt: 2, status: 503, reason: .serviceUnavailable, elapsed: .seconds(60), random: 0.5) == .giveUp(.timeExhausted)
        )
        var patient = APNsRetryPolicy()
        patient.maximumAttempts = 100
        patient.maximumTotal = .seconds(3600)
        #expect(patient.decision(afterAttempt: 40, status: 429, reason: .tooManyRequests, elapsed: .zero, random: 1) == .retry(after: .seconds(10)))
    }
}

@Suite("Retry waves")
struct APNsRetryWaveTests {
    @Test("a batch's retries go out in waves by their own backoff, never before it, not all after the longest")
    func waves() {
        let retries: [(position: Int, delay: Duration)] = [
            (4, .milliseconds(390)), (0, .milliseconds(205)), (7, .milliseconds(212)), (2, .milliseconds(300)), (5, .milliseconds(214)),
            (9, .zero),
        ]
        let waves = APNsRetryPolicy.waves(retries, resolution: .milliseconds(10))
        #expect(
            waves == [
                .init(delay: .zero, positions: [9]),
                .init(delay: .milliseconds(214), positions: [0, 5, 7]),
                .init(delay: .milliseconds(300), positions: [2]),
                .init(delay: .milliseconds(390), positions: [4]),
            ]
        )
        #expect(APNsRetryPolicy.waves([], resolution: .milliseconds(10)).isEmpty)
    }

    @Test("with the policy's jitter, 100 retries of one batch spread over the jitter range")
    func jitterSpreads() {
        let policy = APNsRetryPolicy()
        let retries = (0..<100).map { position -> (position: Int, delay: Duration) in
            guard
                case .retry(let delay) = policy.decision(
                    afterAttempt: 1,
                    status: 503,
                    reason: .serviceUnavailable,
                    elapsed: .zero,
                    random: Double(position) / 100
                )
            else { return (position, .zero) }
            return (position, delay)
        }
        let waves = APNsRetryPolicy.waves(retries, resolution: .milliseconds(10))
        #expect(waves.count >= 9)
        #expect(waves.first!.delay < .milliseconds(115))
        #expect(waves.last!.delay > .milliseconds(190))
        #expect(waves.flatMap(\.positions).sorted() == Array(0..<100))
    }
}
