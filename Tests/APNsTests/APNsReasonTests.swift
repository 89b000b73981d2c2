import APNs
import PaperboyCore
import Testing

@Suite("APNs reasons")
struct APNsReasonTests {
    static let documented = [
        "BadCollapseId", "BadDeviceToken", "BadExpirationDate", "BadMessageId", "BadPriority", "BadTopic", "DeviceTokenNotForTopic",
        "DuplicateHeaders", "IdleTimeout", "InvalidPushType", "MissingDeviceToken", "MissingTopic", "PayloadEmpty", "TopicDisallowed",
        "BadCertificate", "BadCertificateEnvironment", "ExpiredProviderToken", "Forbidden", "InvalidProviderToken",
        "MissingProviderToken", "UnrelatedKeyIdInToken", "BadPath", "MethodNotAllowed", "Unregistered", "ExpiredToken",
        "PayloadTooLarge", "TooManyProviderTokenUpdates", "TooManyRequests", "InternalServerError", "ServiceUnavailable", "Shutdown",
    ]

    @Test("every documented reason decodes to a known case and back", arguments: documented)
    func documentedReason(_ text: String) {
        let reason = APNsReason(rawValue: text)
        #expect(reason != .unknown(text))
        #expect(reason.rawValue == text)
    }

    @Test("an unknown reason decodes too, keeping its text")
    func unknownReason() {
        #expect(APNsReason(rawValue: "SomethingNew") == .unknown("SomethingNew"))
        #expect(APNsReason(rawValue: "SomethingNew").description == "SomethingNew")
        #expect(!APNsReason(rawValue: "SomethingNew").isRetryable)
    }

    @Test("only throttling and server failures are retried; token faults are permanent")
    func retryRules() {
        let retryable = Set(Self.documented.map(APNsReason.init(rawValue:)).filter(\.isRetryable))
        #expect(retryable == [.tooManyRequests, .internalServerError, .serviceUnavailable, .shutdown])
        for reason in [APNsReason.badDeviceToken, .deviceTokenNotForTopic, .unregistered, .expiredToken, .payloadTooLarge] {
            #expect(!reason.isRetryable, "\(reason) must never be retried")
        }
        let permanent = Set(Self.documented.map(APNsReason.init(rawValue:)).filter(\.isPermanentForToken))
        #expect(permanent == [.badDeviceToken, .deviceTokenNotForTopic, .unregistered, .expiredToken])
    }
}
