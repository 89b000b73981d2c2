import APNs
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
