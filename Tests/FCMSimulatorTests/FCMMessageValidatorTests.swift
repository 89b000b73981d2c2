import FCMSimulator
import Testing

/// The message rules without I/O: each body FCM refuses is refused with a message naming the field.
@Suite("FCM simulator: message rules")
struct FCMMessageValidatorTests {
    let validator = FCMMessageValidator(isIOSToken: { $0.hasPrefix("ios-") })
    static let token = Body.androidToken

    func message(_ fields: String) -> String { #"{"message":{"# + fields + "}}" }

    @Test("messages FCM accepts")
    func accepted() {
        let bodies = [
            message(#""token":"\#(Self.token)","data":{"a":"1"}"#),
            message(#""topic":"/topics/morning-edition""#),
            message(#""condition":"'morning' in topics""#),
            message(
                #""token":"\#(Self.token)","android":{"priority":"normal","ttl":"3.5s","collapseKey":"nikkei","data":{"k":"v"}},"notification":{"title":"t"}"#
            ),
            message(#""token":"\#(Self.token)","android":{"priority":"HIGH","ttl":"2419200s","collapse_key":"c"}"#),
            message(#""token":"ios-abc","data":{"a":"1"},"apns":{"headers":{"apns-priority":"5"},"payload":{"aps":{"content-available":1}}}"#),
            message(#""token":"ios-abc","notification":{"title":"Morning edition"}"#),
            message(#""token":"ios-abc","apns":{"payload":{"aps":{"alert":"hi"}}}"#),
            #"{"validate_only":true,"message":{"token":"\#(Self.token)"}}"#,
        ]
        for body in bodies {
            guard case .valid = validator.validate(body: Array(body.utf8)) else {
                Issue.record("refused: \(body): \(validator.validate(body: Array(body.utf8)))")
                continue
            }
        }
        #expect(validator.validate(body: Array(bodies[1].utf8)) == .valid(.init(target: .topic("morning-edition"), validateOnly: false)))
        #expect(validator.validate(body: Array(bodies[8].utf8)) == .valid(.init(target: .token(Self.token), validateOnly: true)))
    }

    @Test("messages FCM refuses, each with a message naming what is wrong")
    func refused() {
        let big = String(repeating: "x", count: 4096)
        let cases: [(String, String)] = [
            ("not JSON", "not a JSON object"),
            (#"{"mesage":{}}"#, #"Unknown name "mesage""#),
            (message(#""token":"\#(Self.token)","priority":"high""#), #"Unknown name "priority" at 'message'"#),
            (message(#""data":{"a":"1"}"#), "Recipient of the message is not set."),
            (message(#""token":"\#(Self.token)","topic":"news""#), "oneof field 'target' is already set"),
            (message(#""token":"has spaces in it""#), FCMMessageValidator.invalidTokenMessage),
            (message(#""token":"""#), FCMMessageValidator.invalidTokenMessage),
            (message(#""topic":"bad topic!""#), "'message.topic'"),
            (message(#""token":"\#(Self.token)","data":{"count":1}"#), "'message.data[count].value'"),
            (message(#""token":"\#(Self.token)","data":{"from":"me"}"#), "'from'"),
            (message(#""token":"\#(Self.token)","data":{"message_type":"x"}"#), "'message_type'"),
            (message(#""token":"\#(Self.token)","data":{"google.x":"y"}"#), "'google.x'"),
            (message(#""token":"\#(Self.token)","data":{"gcm.notification.title":"y"}"#), "'gcm.notification.title'"),
            (message(#""token":"\#(Self.token)","notification":{"title":"t","sound":"s"}"#), #"Unknown name "sound" at 'message.notification'"#),
            (message(#""token":"\#(Self.token)","android":{"priority":"urgent"}"#), "'message.android.priority'"),
            (message(#""token":"\#(Self.token)","android":{"ttl":"3600"}"#), "'message.android.ttl'"),
            (message(#""token":"\#(Self.token)","android":{"ttl":"-1s"}"#), "'message.android.ttl'"),
            (message(#""token":"\#(Self.token)","android":{"ttl":"2419201s"}"#), "'message.android.ttl'"),
            (message(#""token":"\#(Self.token)","android":{"ttl":3600}"#), "'message.android.ttl'"),
            (message(#""token":"\#(Self.token)","android":{"collapse_key":7}"#), "'message.android.collapse_key'"),
            (message(#""token":"\#(Self.token)","android":{"delay":"1s"}"#), #"Unknown name "delay" at 'message.android'"#),
            (message(#""token":"\#(Self.token)","apns":{"headers":{"apns-priority":5}}"#), "'message.apns.headers[apns-priority].value'"),
            (message(#""token":"\#(Self.token)","apns":{"headers":{"apns-priority":"7"}}"#), "apns-priority must be 5 or 10"),
            (message(#""token":"\#(Self.token)","apns":{"payload":{"custom":1}}"#), "'aps'"),
            (message(#""token":"ios-abc","data":{"a":"1"}"#), "apns-priority 5"),
            (message(#""token":"ios-abc","data":{"a":"1"},"apns":{"headers":{"apns-priority":"10"}}"#), "apns-priority 5"),
            (message(#""token":"\#(Self.token)","data":{"a":"\#(big)"}"#), "Message is too big: 4097 bytes"),
            (#"{"validate_only":"yes","message":{"token":"\#(Self.token)"}}"#, "'validate_only'"),
        ]
        for (body, expected) in cases {
            guard case .invalid(let text, _) = validator.validate(body: Array(body.utf8)) else {
                Issue.record("accepted: \(body)")
                continue
            }
            #expect(text.contains(expected), "\(body): \(text)")
        }
    }

    @Test("the payload limit counts data keys and values and notification fields: 4096 bytes pass, 4097 do not")
    func payloadLimit() {
        // "a" + value, "title" + value: 1 + 4090 + 5 = 4096.
        let fits = message(#""token":"\#(Self.token)","data":{"a":"\#(String(repeating: "x", count: 4090))"},"notification":{"title":""}"#)
        let over = message(#""token":"\#(Self.token)","data":{"a":"\#(String(repeating: "x", count: 4090))"},"notification":{"title":"y"}"#)
        #expect(validator.validate(body: Array(fits.utf8)) == .valid(.init(target: .token(Self.token), validateOnly: false)))
        #expect(validator.validate(body: Array(over.utf8)) == .invalid("Message is too big: 4097 bytes of data and notification, the limit is 4096"))
    }

    @Test("only a bad token is marked as the token's fault")
    func invalidTokenFlag() {
        #expect(
            validator.validate(body: Array(message(#""token":"a b""#).utf8)) == .invalid(FCMMessageValidator.invalidTokenMessage, invalidToken: true)
        )
        guard case .invalid(_, let invalidToken) = validator.validate(body: Array(message(#""token":"abc","data":{"from":"x"}"#).utf8)) else {
            Issue.record("accepted a reserved key")
            return
        }
        #expect(!invalidToken)
    }
}
