import APNs
import Foundation
import NIOCore
import NIOHPACK
import PaperboyCore
import PushTransport
import Testing

/// What APNs's answers mean, read from status, headers and body without I/O: only an answer with APNs's own JSON
/// `reason` may say that a token is dead.
@Suite("APNs answers and verdicts")
struct APNsVerdictTests {
    /// A token source that is never asked: reading answers needs none.
    struct NoTokens: APNsProviderTokenSource {
        func current() throws -> String { "token" }
        func rejected(_ token: String) {}
        var keyID: String { "KEY1234567" }
    }

    static let provider = APNsProvider(configuration: .init(endpoint: .production), tokens: NoTokens())

    static func answer(_ status: Int, _ body: String?, apnsID: String? = "6c3c4b1e-0000-4000-8000-000000000001") -> APNsOutcome {
        var headers = HPACKHeaders()
        if let apnsID { headers.add(name: "apns-id", value: apnsID) }
        return provider.outcome(status: status, headers: headers, body: body.map { ByteBuffer(string: $0) })
    }

    @Test(
        "each reason's verdict: the token's, our credentials', the app's configuration, or this message's",
        arguments: [
            (410, APNsReason.unregistered, PushVerdict.tokenDead(since: Date(timeIntervalSince1970: 1_700_000_000))),
            (410, .expiredToken, .tokenDead(since: Date(timeIntervalSince1970: 1_700_000_000))),
            (400, .badDeviceToken, PushVerdict.tokenInvalid(hint: APNsRejection(status: 400, reason: .badDeviceToken).verdict.misconfigurationHint!)),
            (
                400, .deviceTokenNotForTopic,
                .tokenInvalid(hint: APNsRejection(status: 400, reason: .deviceTokenNotForTopic).verdict.misconfigurationHint!)
            ),
            (403, .invalidProviderToken, .credentialsRejected), (403, .expiredProviderToken, .credentialsRejected),
            (403, .missingProviderToken, .credentialsRejected), (403, .unrelatedKeyIdInToken, .credentialsRejected),
            (403, .badCertificate, .credentialsRejected), (403, .forbidden, .credentialsRejected),
            (429, .tooManyProviderTokenUpdates, .credentialsRejected), (400, .badTopic, .misconfigured), (400, .topicDisallowed, .misconfigured),
            (400, .missingTopic, .misconfigured), (404, .badPath, .misconfigured), (405, .methodNotAllowed, .misconfigured),
            (413, .payloadTooLarge, .dropped), (400, .badPriority, .dropped), (429, .tooManyRequests, .unavailable),
            (503, .serviceUnavailable, .unavailable), (500, .internalServerError, .unavailable), (503, .shutdown, .unavailable),
            (410, .unknown("GoneForNewReasons"), .dropped),
            (403, .unknown("NewCredentialProblem"), .credentialsRejected),
        ]
    )
    func verdicts(status: Int, reason: APNsReason, verdict: PushVerdict) {
        let body =
            status == 410
            ? #"{"reason":"\#(reason.rawValue)","timestamp":1700000000000}"# : #"{"reason":"\#(reason.rawValue)"}"#
        let outcome = Self.answer(status, body)
        guard case .rejected(let rejection) = outcome else {
            Issue.record("\(outcome)")
            return
        }
        #expect(rejection.isAPNsAnswer)
        #expect(rejection.reason == reason)
        #expect(outcome.verdict == verdict)
    }

    @Test(
        "an answer without APNs's JSON reason never says the token is dead: a 4xx is our endpoint's fault, a 5xx an unknown fate",
        arguments: [
            (410, nil as String?, PushVerdict.misconfigured), (410, "<html><body>Gone</body></html>", .misconfigured),
            (404, "<html><h1>404 Not Found</h1></html>", .misconfigured), (400, #"{"error":"bad request"}"#, .misconfigured),
            (403, #"{"message":"Forbidden"}"#, .misconfigured), (502, "<html>Bad Gateway</html>", .fateUnknown), (503, nil, .fateUnknown),
        ]
    )
    func foreignAnswers(status: Int, body: String?, verdict: PushVerdict) {
        let outcome = Self.answer(status, body, apnsID: nil)
        guard case .rejected(let rejection) = outcome else {
            Issue.record("\(outcome)")
            return
        }
        #expect(!rejection.isAPNsAnswer)
        #expect(!rejection.reason.isPermanentForToken)
        #expect(outcome.verdict == verdict)
    }

    @Test("a 200 without an apns-id is not APNs's: its fate is unknown, not accepted")
    func okWithoutAPNsID() {
        guard case .fateUnknown(let error) = Self.answer(200, nil, apnsID: nil) else {
            Issue.record("a 200 without apns-id was taken for APNs's")
            return
        }
        #expect(error.code == .foreignAnswer)
        #expect(Self.answer(200, nil) == .accepted(apnsID: "6c3c4b1e-0000-4000-8000-000000000001"))
    }

    @Test("ExpiredProviderToken is sent again with a fresh token; 503 after a backoff, even without APNs's body; the rest not")
    func retries() {
        let provider = Self.provider
        #expect(
            provider.retry(after: Self.answer(403, #"{"reason":"ExpiredProviderToken"}"#), attempt: 1, elapsed: .zero, random: 1)
                == .withFreshCredential
        )
        #expect(
            provider.retry(after: Self.answer(503, #"{"reason":"ServiceUnavailable"}"#), attempt: 1, elapsed: .zero, random: 1)
                == .after(.milliseconds(200))
        )
        #expect(provider.retry(after: Self.answer(503, nil), attempt: 1, elapsed: .zero, random: 1) == .after(.milliseconds(200)))
        #expect(provider.retry(after: Self.answer(410, #"{"reason":"Unregistered"}"#), attempt: 1, elapsed: .zero, random: 1) == .no)
        #expect(provider.retry(after: Self.answer(404, "<html></html>"), attempt: 1, elapsed: .zero, random: 1) == .no)
        #expect(provider.retry(after: .accepted(apnsID: "x"), attempt: 1, elapsed: .zero, random: 1) == .no)
    }
}
