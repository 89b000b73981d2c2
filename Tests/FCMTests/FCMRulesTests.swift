import Foundation
import NIOCore
import NIOHPACK
import PaperboyCore
import PushTransport
import Testing

@testable import FCM

@Suite("FCM rules: error codes, retries, quota, messages")
struct FCMRulesTests {
    static func rejection(_ status: Int, _ code: FCMErrorCode, _ message: String = "", retryAfter: Duration? = nil) -> FCMRejection {
        FCMRejection(status: status, code: code, message: message, retryAfter: retryAfter)
    }

    @Test("each error code asks for its action: dead tokens, retries, a fresh access token, an app configuration error")
    func actions() {
        #expect(Self.rejection(404, .unregistered).action == .deactivateToken)
        #expect(Self.rejection(403, .senderIDMismatch).action == .deactivateToken)
        #expect(Self.rejection(400, .invalidArgument, FCMErrorCode.invalidTokenMessage).action == .deactivateToken)
        #expect(Self.rejection(400, .invalidArgument, "Invalid value at 'message.data[0].value'").action == .drop)
        #expect(Self.rejection(429, .quotaExceeded).action == .retry)
        #expect(Self.rejection(503, .unavailable).action == .retry)
        #expect(Self.rejection(500, .internal).action == .retry)
        #expect(Self.rejection(401, .unauthenticated).action == .refreshAccessToken)
        #expect(Self.rejection(401, .thirdPartyAuthError).action == .fixConfiguration)
        #expect(Self.rejection(400, .other("SOMETHING_NEW")).action == .drop)
    }

    @Test("answers are read as FCM writes them: the FcmError detail first, then error.status, then the HTTP status")
    func readsAnswers() {
        let body = Data(
            #"{"error":{"code":404,"message":"Requested entity was not found.","status":"NOT_FOUND","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"UNREGISTERED"}]}}"#
                .utf8
        )
        let unregistered = FCMRejection(status: 404, retryAfter: nil, body: body)
        #expect(unregistered.code == .unregistered)
        #expect(unregistered.message == "Requested entity was not found.")
        let unauthenticated = FCMRejection(
            status: 401,
            retryAfter: nil,
            body: Data(#"{"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED"}}"#.utf8)
        )
        #expect(unauthenticated.code == .unauthenticated)
        let quota = FCMRejection(status: 429, retryAfter: "17", body: Data("not json".utf8))
        #expect(quota.code == .quotaExceeded)
        #expect(quota.retryAfter == .seconds(17))
        #expect(FCMRejection(status: 502, retryAfter: nil, body: Data()).code == .other("HTTP 502"))
    }

    @Test(
        "an answer without Google's error body never deactivates a token: a 4xx is our endpoint's fault, 429 and 5xx are retried and end unknown",
        arguments: [
            (404, "<html><h1>404 Not Found</h1></html>", FCMErrorCode.other("HTTP 404"), PushVerdict.misconfigured),
            (404, "", .other("HTTP 404"), .misconfigured), (403, #"{"message":"Forbidden"}"#, .other("HTTP 403"), .misconfigured),
            (400, #"{"error":"bad"}"#, .other("HTTP 400"), .misconfigured), (401, "", .other("HTTP 401"), .misconfigured),
            (503, "", .unavailable, .fateUnknown), (500, "<html>oops</html>", .internal, .fateUnknown), (429, "", .quotaExceeded, .fateUnknown),
            (502, "<html>Bad Gateway</html>", .other("HTTP 502"), .fateUnknown),
        ]
    )
    func foreignAnswers(status: Int, body: String, code: FCMErrorCode, verdict: PushVerdict) {
        let rejection = FCMRejection(status: status, retryAfter: nil, body: Data(body.utf8))
        #expect(!rejection.isFCMAnswer)
        #expect(rejection.code == code)
        #expect(rejection.action != .deactivateToken)
        #expect(rejection.action != .refreshAccessToken, "a refresh cannot help an answer that is not FCM's")
        #expect(rejection.verdict == verdict)
    }

    @Test("FCM's own answers: dead tokens, our credentials, the app's configuration, this message")
    func verdicts() {
        func verdict(_ status: Int, _ googleStatus: String, fcmCode: String? = nil, message: String = "") -> PushVerdict {
            let details = fcmCode.map { #","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"\#($0)"}]"# } ?? ""
            let body = #"{"error":{"code":\#(status),"message":"\#(message)","status":"\#(googleStatus)"\#(details)}}"#
            let rejection = FCMRejection(status: status, retryAfter: nil, body: Data(body.utf8))
            #expect(rejection.isFCMAnswer)
            return rejection.verdict
        }
        #expect(verdict(404, "NOT_FOUND", fcmCode: "UNREGISTERED") == .tokenDead(since: nil))
        #expect(verdict(403, "PERMISSION_DENIED", fcmCode: "SENDER_ID_MISMATCH").name == "tokenInvalid")
        #expect(verdict(400, "INVALID_ARGUMENT", fcmCode: "INVALID_ARGUMENT", message: FCMErrorCode.invalidTokenMessage).name == "tokenInvalid")
        #expect(verdict(400, "INVALID_ARGUMENT", fcmCode: "INVALID_ARGUMENT", message: "Invalid value at 'message.data[0].value'") == .dropped)
        #expect(verdict(401, "UNAUTHENTICATED") == .credentialsRejected)
        #expect(verdict(403, "PERMISSION_DENIED") == .credentialsRejected, "the service account may not send for this project")
        #expect(verdict(401, "UNAUTHENTICATED", fcmCode: "THIRD_PARTY_AUTH_ERROR") == .misconfigured)
        #expect(verdict(404, "NOT_FOUND") == .misconfigured, "no such project or method: the path is wrong, not the token")
        #expect(verdict(503, "UNAVAILABLE", fcmCode: "UNAVAILABLE") == .unavailable, "busy or failing: a pause, never an outcome")
        #expect(verdict(429, "RESOURCE_EXHAUSTED", fcmCode: "QUOTA_EXCEEDED") == .unavailable)
        #expect(verdict(500, "INTERNAL", fcmCode: "INTERNAL") == .unavailable)
    }

    /// A provider whose answers are read without sending anything: its access token is fixed.
    static func provider() -> FCMProvider {
        struct FixedToken: FCMAccessTokenSource {
            func current() async throws(FCMAuthError) -> String { "token" }
            func rejected(_ token: String) async {}
        }
        return FCMProvider(configuration: .init(), projectID: "paperboy-test", tokens: FixedToken())
    }

    @Test("a 200 without a message name is not FCM's: its fate is unknown, not accepted")
    func okWithoutName() throws {
        let provider = Self.provider()
        guard case .fateUnknown(let error) = provider.outcome(status: 200, headers: [:], body: ByteBuffer(string: "<html>OK</html>")) else {
            Issue.record("a 200 without a name was taken for FCM's")
            return
        }
        #expect(error.code == .foreignAnswer)
        let accepted = provider.outcome(status: 200, headers: [:], body: ByteBuffer(string: #"{"name":"projects/p/messages/1"}"#))
        #expect(accepted == .accepted(name: "projects/p/messages/1"))
    }

    @Test("a 200's message name reads the same whether the quick reader or the JSON decoder takes the body")
    func okNameReaders() throws {
        let provider = Self.provider()
        func outcome(_ body: String) -> FCMOutcome { provider.outcome(status: 200, headers: [:], body: ByteBuffer(string: body)) }
        #expect(FCMProvider.acceptedName(ByteBuffer(string: #"{"name":"projects/p/messages/1"}"#)) == "projects/p/messages/1")
        #expect(outcome(" {\"name\":\"projects/p/messages/2\"}\n") == .accepted(name: "projects/p/messages/2"))
        // Bodies the quick reader leaves to the decoder: an escape, spacing inside, another key, a name that is not a string.
        #expect(FCMProvider.acceptedName(ByteBuffer(string: #"{"name":"projects\/p/messages/3"}"#)) == nil)
        #expect(outcome(#"{"name":"projects\/p/messages/3"}"#) == .accepted(name: "projects/p/messages/3"))
        #expect(outcome(#"{ "name" : "projects/p/messages/4" }"#) == .accepted(name: "projects/p/messages/4"))
        #expect(outcome(#"{"other":"x","name":"projects/p/messages/5"}"#) == .accepted(name: "projects/p/messages/5"))
        #expect(FCMProvider.acceptedName(ByteBuffer(string: #"{"name":"a","x":"b"}"#)) == nil)
        guard case .fateUnknown = outcome(#"{"name":7}"#) else {
            Issue.record("a name that is not a string was taken for FCM's answer")
            return
        }
    }

    @Test("only 429, 500 and 503 are retried: after Retry-After (never sooner), 60 s for a 429 without it, else a backoff from 10 s")
    func retries() {
        let policy = FCMRetryPolicy()
        func decide(_ rejection: FCMRejection, attempt: Int = 1, elapsed: Duration = .zero, random: Double = 0) -> FCMRetryPolicy.Decision {
            policy.decision(afterAttempt: attempt, rejection: rejection, elapsed: elapsed, random: random)
        }
        for (status, code) in [
            (400, FCMErrorCode.invalidArgument), (401, .thirdPartyAuthError), (401, .unauthenticated), (403, .senderIDMismatch), (404, .unregistered),
        ] {
            #expect(decide(Self.rejection(status, code)) == .giveUp(.permanent), "\(status) \(code)")
        }
        #expect(decide(Self.rejection(429, .quotaExceeded, retryAfter: .seconds(30))) == .retry(after: .seconds(30)))
        #expect(decide(Self.rejection(429, .quotaExceeded, retryAfter: .seconds(30)), random: 0.999) <= .retry(after: .seconds(33)))
        #expect(decide(Self.rejection(429, .quotaExceeded)) == .retry(after: .seconds(60)))
        #expect(decide(Self.rejection(503, .unavailable), random: 1) == .retry(after: .seconds(10)))
        #expect(decide(Self.rejection(503, .unavailable), random: 0) == .retry(after: .seconds(5)))
        #expect(decide(Self.rejection(500, .internal), attempt: 3, random: 1) == .retry(after: .seconds(40)))
        #expect(decide(Self.rejection(503, .unavailable, retryAfter: .seconds(2))) == .retry(after: .seconds(2)))
        #expect(decide(Self.rejection(503, .unavailable), attempt: 5) == .giveUp(.attemptsExhausted))
        #expect(decide(Self.rejection(429, .quotaExceeded), elapsed: .seconds(250)) == .giveUp(.timeExhausted))
    }

    @Test("the quota is a token bucket: a second's worth at once, then the configured rate, waits in order")
    func quota() {
        var quota = FCMRateLimit(perMinute: 600_000)
        #expect(quota.reserve(10_000, now: .zero) == .zero, "one second's worth goes at once")
        #expect(quota.reserve(5_000, now: .zero) == .milliseconds(500))
        #expect(quota.reserve(5_000, now: .zero) == .seconds(1), "the next caller waits behind the first")
        // A quiet minute refills only up to the burst.
        #expect(quota.reserve(10_000, now: .seconds(61)) == .zero)
        #expect(quota.reserve(1, now: .seconds(61)) > .zero)
        var small = FCMRateLimit(perMinute: 60)
        #expect(small.reserve(1, now: .zero) == .zero)
        #expect(small.reserve(1, now: .zero) == .seconds(1))
    }

    @Test("a batch's requests share one buffer of bodies, each request exactly its own delivery's body, escaped tokens included")
    func batchBodies() throws {
        let android = try FCMMessage.data(["edition": "e1"], for: .android(priority: .normal, ttl: .seconds(60), collapseKey: "morning"))
        let ios = try FCMMessage.data(["edition": "e2"], for: .ios(expiration: nil, collapseID: nil))
        let deliveries = [
            FCMDelivery(android, to: "dGVzdA:APA91b-x_y"),
            FCMDelivery(ios, to: String(repeating: "b", count: 163)),
            FCMDelivery(android, to: #"a "quoted" \ token"#),
            FCMDelivery(ios, to: "é"),
            FCMDelivery(android, to: "last"),
        ]
        let requests = Self.provider().requests(for: deliveries, credential: "access")
        #expect(requests.map { Array($0.body.readableBytesView) } == deliveries.map { $0.message.body(token: $0.token) })
        for request in requests {
            #expect(request.headers.first(name: "authorization") == "Bearer access")
        }
        #expect(Self.provider().requests(for: [], credential: "access").isEmpty)
    }

    @Test("an Android data message: string data, normal priority, ttl in seconds, collapse key; the token spliced in")
    func androidBody() throws {
        let message = try FCMMessage.data(
            ["edition": "e1", "fetch": #"["/a","/b"]"#],
            for: .android(priority: .normal, ttl: .seconds(5400), collapseKey: "morning")
        )
        let body = message.body(token: "dGVzdA:APA91b-x_y")
        let json = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]
        let inner = try #require(json?["message"] as? [String: Any])
        #expect(inner["token"] as? String == "dGVzdA:APA91b-x_y")
        #expect(inner["data"] as? [String: String] == ["edition": "e1", "fetch": #"["/a","/b"]"#])
        let android = try #require(inner["android"] as? [String: Any])
        #expect(android["priority"] as? String == "normal")
        #expect(android["ttl"] as? String == "5400s")
        #expect(android["collapse_key"] as? String == "morning")
        #expect(inner["apns"] == nil)
    }

    @Test("a token that needs escaping is escaped, never replaced: quotes, backslashes, control characters, non-ASCII")
    func escapedToken() throws {
        let message = try FCMMessage.data(["edition": "e1"], for: .android(priority: .normal, ttl: .seconds(60), collapseKey: nil))
        for token in [#"a"b\c"#, "tab\there", "caf\u{e9}:APA91b", "line\u{1}end"] {
            let json = try JSONSerialization.jsonObject(with: Data(message.body(token: token))) as? [String: Any]
            #expect((json?["message"] as? [String: Any])?["token"] as? String == token)
        }
    }

    @Test("a token endpoint that refuses the service account is our credentials refused, nothing sent; one that fails is not")
    func refusedAccount() {
        #expect(FCMOutcome.notSent(PushTransportError(.credentialsRefused, "invalid_grant")).verdict == .credentialsRejected)
        #expect(FCMOutcome.notSent(PushTransportError(.connectFailed, "HTTP 503")).verdict == .notSent)
    }

    @Test("an iOS data message through FCM carries apns-priority 5, push type background and content-available")
    func iosBody() throws {
        let message = try FCMMessage.data(["edition": "e1"], for: .ios(expiration: Date(timeIntervalSince1970: 1_800_000_000), collapseID: nil))
        let json = try JSONSerialization.jsonObject(with: Data(message.body(token: "t"))) as? [String: Any]
        let apns = try #require((json?["message"] as? [String: Any])?["apns"] as? [String: Any])
        #expect(apns["headers"] as? [String: String] == ["apns-priority": "5", "apns-push-type": "background", "apns-expiration": "1800000000"])
        #expect(((apns["payload"] as? [String: Any])?["aps"] as? [String: Any])?["content-available"] as? Int == 1)
    }

    @Test("reserved data keys, a ttl over 28 days and payloads over 4096 bytes are refused before sending")
    func refusedMessages() {
        let android = FCMMessage.Target.android(priority: .normal, ttl: nil, collapseKey: nil)
        for key in ["from", "message_type", "google.c.a", "gcm.notification.title", ""] {
            #expect(throws: FCMMessageError.self, "\(key)") { try FCMMessage.data([key: "x"], for: android) }
        }
        #expect(throws: FCMMessageError.self) {
            try FCMMessage.data(["a": "b"], for: .android(priority: .high, ttl: .seconds(2_419_201), collapseKey: nil))
        }
        #expect(throws: FCMMessageError.self) { try FCMMessage.data(["big": String(repeating: "x", count: 4094)], for: android) }
        #expect(throws: Never.self) { try FCMMessage.data(["big": String(repeating: "x", count: 4093)], for: android) }
    }
}

extension FCMRetryPolicy.Decision {
    static func <= (lhs: Self, rhs: Self) -> Bool {
        guard case .retry(let left) = lhs, case .retry(let right) = rhs else { return false }
        return left <= right
    }
}

@Suite("FCM alert messages")
struct FCMAlertMessageTests {
    @Test("an alert carries notification title and body; Android at high priority, iOS as an APNs alert with mutable-content")
    func alert() throws {
        let android = try FCMMessage.alert(
            title: "Your morning edition is ready",
            body: "Tap to read",
            data: ["edition": "e1"],
            for: .android(priority: .normal, ttl: nil, collapseKey: nil)
        )
        let json = try JSONSerialization.jsonObject(with: Data(android.body(token: "t"))) as? [String: Any]
        let inner = try #require(json?["message"] as? [String: Any])
        #expect(inner["notification"] as? [String: String] == ["title": "Your morning edition is ready", "body": "Tap to read"])
        #expect((inner["android"] as? [String: Any])?["priority"] as? String == "high")
        let ios = try FCMMessage.alert(title: "t", body: "b", data: [:], for: .ios(expiration: nil, collapseID: nil))
        let apns = try #require(
            ((try JSONSerialization.jsonObject(with: Data(ios.body(token: "t"))) as? [String: Any])?["message"] as? [String: Any])?["apns"]
                as? [String: Any]
        )
        #expect(apns["headers"] as? [String: String] == ["apns-priority": "10", "apns-push-type": "alert"])
        #expect(((apns["payload"] as? [String: Any])?["aps"] as? [String: Any])?["mutable-content"] as? Int == 1)
    }
}
