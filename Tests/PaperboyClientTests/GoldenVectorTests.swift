import APNs
import FCM
import Foundation
import PaperboyBroadcast
import PaperboyClient
import PaperboyCore
import PaperboyStore
import Testing

/// The client's type, named outside `#require`, whose expansion cannot take a module-qualified call.
private typealias ClientTier = PaperboyClient.ImageTier
private typealias ClientReceiptResult = PaperboyClient.ReceiptResult
private typealias ClientDevicePlatform = PaperboyClient.DeviceRegistration.DevicePlatform
private typealias ClientAPNsEnvironment = PaperboyClient.DeviceRegistration.APNsEnvironment

/// The golden vectors (clients/vectors), shared with the Android client (clients/android, whose tests they drive): the
/// server builds its pushes and its edition JSON with its real code and must send exactly what the files say, decodes the
/// clients' bodies as the files say, and the Swift client reads and writes them as the files say. A failure names the
/// file: when the server's output changes on purpose, change the file, and the clients' tests tell what that breaks.
@Suite("Golden vectors: what the server sends and the clients read")
struct GoldenVectorTests {
    /// A vector's string, required (a helper, since `#require` cannot nest in `#require`).
    static func string(_ value: Any?, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        try #require(value as? String, sourceLocation: sourceLocation)
    }

    /// A vector's string read as `make` reads it, required.
    static func parse<Value>(_ value: Any?, _ make: (String) -> Value?, sourceLocation: SourceLocation = #_sourceLocation) throws -> Value {
        let text = try string(value, sourceLocation: sourceLocation)
        return try #require(make(text), "'\(text)' read as \(Value.self)", sourceLocation: sourceLocation)
    }

    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("clients/vectors")

    static func load(_ path: String) throws -> [String: Any] {
        let data = try Data(contentsOf: directory.appendingPathComponent(path))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], "\(path)")
    }

    static func files(_ folder: String, prefix: String) throws -> [String] {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent(folder).path)
        return names.filter { $0.hasPrefix(prefix) && $0.hasSuffix(".json") }.sorted().map { "\(folder)/\($0)" }
    }

    /// The edition files (not the lists of refused and tolerated editions).
    static func editionFiles() throws -> [String] {
        try files("editions", prefix: "").filter { !$0.hasSuffix("refused.json") && !$0.hasSuffix("tolerated.json") }
    }

    /// Whether two JSON values (as `JSONSerialization` reads them, or as the tests build them) are the same: objects
    /// whatever their key order, numbers by value (12 and 12.0 are one number).
    static func same(_ left: Any?, _ right: Any?) -> Bool {
        switch (left, right) {
        case (nil, nil), (is NSNull, is NSNull):
            return true
        case (let left as [String: Any], let right as [String: Any]):
            return left.count == right.count && left.allSatisfy { key, value in right[key].map { same(value, $0) } ?? false }
        case (let left as [Any], let right as [Any]):
            return left.count == right.count && zip(left, right).allSatisfy { same($0, $1) }
        case (let left as String, let right as String):
            return left == right
        case (let left as Bool, let right as Bool):
            return left == right
        case (let left as NSNumber, let right as NSNumber):
            return left.doubleValue == right.doubleValue
        default:
            return false
        }
    }

    /// JSON text for a failure's message.
    static func text(_ value: Any?) -> String {
        guard let value, let data = try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed]) else {
            return "nil"
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// An RFC 3339 instant of a vector (`sentAt`), without fractional seconds.
    static func instant(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }

    /// UNIX seconds of a vector.
    static func date(_ value: Any?) -> Date? {
        (value as? NSNumber).map { Date(timeIntervalSince1970: $0.doubleValue) }
    }

    /// The server's edition of an edition file: the manifest as published, with the id, app and publication time the
    /// file gives, and `publicationTitle` for the alerts' words.
    static func edition(_ path: String, publicationTitle: String? = nil) throws -> PaperboyCore.Edition {
        let json = try #require(try load(path)["edition"] as? [String: Any])
        let manifest = try JSONDecoder().decode(PaperboyCore.EditionManifest.self, from: JSONSerialization.data(withJSONObject: json))
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let id = try #require(json["id"] as? String)
        let publishedAt = try #require(json["publishedAt"] as? String)
        return PaperboyCore.Edition(
            id: try #require(UUID(uuidString: id)),
            appID: try #require(json["appId"] as? Int),
            manifest: manifest,
            deadline: try #require(manifest.deadlineDate),
            publishedAt: try #require(formatter.date(from: publishedAt)),
            publicationTitle: publicationTitle
        )
    }

    /// What the file's `wakeUp` says the Swift client decodes.
    static func expect(_ wakeUp: EditionWakeUp, equals expected: [String: Any], _ path: String, alert: Bool) {
        #expect(wakeUp.editionID == expected["edition"] as? String, "\(path)")
        #expect(wakeUp.manifestPath == expected["manifest"] as? String, "\(path)")
        #expect(wakeUp.tier.rawValue == expected["tier"] as? String, "\(path)")
        #expect(wakeUp.deadline == date(expected["deadline"]), "\(path)")
        #expect(wakeUp.fetch.map(\.absoluteString) == expected["fetch"] as? [String], "\(path)")
        #expect(wakeUp.wave == expected["wave"] as? Int, "\(path)")
        #expect(wakeUp.sentAt == date(expected["sentAt"]), "\(path)")
        let limits = (expected["extension"] as? [String: Any]).map {
            EditionWakeUp.ExtensionLimits(seconds: $0["seconds"] as? Int ?? -1, megabytes: $0["megabytes"] as? Int ?? -1)
        }
        #expect(wakeUp.extensionLimits == limits, "\(path)")
        if alert {
            #expect(wakeUp.isAlert == expected["isAlert"] as? Bool, "\(path)")
        }
    }

    @Test("each edition file is the server's GET /v1/editions/{id} answer for that edition, which it would publish")
    func editionsAsTheServerEncodesThem() throws {
        let paths = try Self.editionFiles()
        #expect(paths.count == 4)
        for path in paths {
            let edition = try Self.edition(path)
            let encoded = try JSONSerialization.jsonObject(with: JSONEncoder().encode(edition))
            let expected = try Self.load(path)["edition"]
            #expect(Self.same(encoded, expected), "\(path): the server encodes \(Self.text(encoded))")
            try edition.manifest.validate(now: edition.publishedAt)
        }
    }

    @Test("the Swift client plans each edition file's tiers as the file says (its own tier, else smaller first, then larger)")
    func plans() throws {
        for path in try Self.editionFiles() {
            let vector = try Self.load(path)
            let json = try JSONSerialization.data(withJSONObject: try #require(vector["edition"]))
            let manifest = try JSONDecoder().decode(PaperboyClient.EditionManifest.self, from: json)
            let plans = try #require(vector["plans"] as? [String: Any])
            #expect(plans.count == 3, "\(path)")
            for (name, value) in plans {
                let expected = try #require(value as? [String: Any])
                let tier = try #require(ClientTier(rawValue: name))
                let plan = try #require(manifest.plan(for: tier), "\(path): no plan for \(name)")
                #expect(plan.tier.rawValue == expected["tier"] as? String, "\(path) \(name)")
                #expect(plan.fellBack == expected["fellBack"] as? Bool, "\(path) \(name)")
                #expect(plan.bundles.map(\.url.absoluteString) == expected["urls"] as? [String], "\(path) \(name)")
                #expect(plan.bytes == (expected["bytes"] as? NSNumber)?.int64Value, "\(path) \(name)")
            }
        }
    }

    @Test("the refused editions the server also refuses on publish name the same field there")
    func refusedOnPublish() throws {
        let cases = try #require(try Self.load("editions/refused.json")["cases"] as? [[String: Any]])
        let publishedAt = try Self.edition("editions/morning-small-large.json").publishedAt
        var checked = 0
        for item in cases where item["serverRefusesOnPublish"] as? Bool == true {
            let name = item["name"] as? String ?? "?"
            let json = try JSONSerialization.data(withJSONObject: try #require(item["edition"]))
            let manifest = try JSONDecoder().decode(PaperboyCore.EditionManifest.self, from: json)
            do {
                try manifest.validate(now: publishedAt)
                Issue.record("\(name): the server would publish it")
            } catch {
                #expect(error.field == item["refusal"] as? String, "\(name): \(error)")
            }
            checked += 1
        }
        #expect(checked >= 8)
    }

    @Test("each FCM message file is what FCMService.fcmMessage sends (data, notification, android or apns), and the client decodes its data")
    func fcmMessages() throws {
        let paths = try Self.files("pushes", prefix: "fcm-android-") + Self.files("pushes", prefix: "fcm-ios-")
        #expect(paths.count == 6)
        for path in paths {
            let vector = try Self.load(path)
            let build = try #require(vector["build"] as? [String: Any])
            let edition = try Self.edition(try #require(build["edition"] as? String), publicationTitle: build["publicationTitle"] as? String)
            let message = try FCMService.fcmMessage(
                for: edition,
                tier: try Self.parse(build["tier"], PaperboyCore.ImageTier.init(rawValue:)),
                kind: try Self.parse(build["kind"], BroadcastProgress.Wave.Kind.init(rawValue:)),
                wave: try #require(build["wave"] as? Int),
                platform: try Self.parse(build["platform"], DevicePlatform.init(rawValue:)),
                priority: try Self.parse(build["priority"], BroadcastOptions.AndroidPriority.init(rawValue:)),
                sentAt: try #require(Self.instant(try Self.string(build["sentAt"])))
            )
            let body = try #require(try JSONSerialization.jsonObject(with: Data(message.body(token: "TOKEN"))) as? [String: Any])
            var sent = try #require(body["message"] as? [String: Any])
            let token = sent.removeValue(forKey: "token") as? String
            #expect(token == "TOKEN")
            #expect(Self.same(sent, vector["message"]), "\(path): the server sends \(Self.text(sent))")
            let expected = try #require(vector["wakeUp"] as? [String: Any])
            let wakeUp = try #require(try EditionWakeUp.decode(data: message.data), "\(path)")
            Self.expect(wakeUp, equals: expected, path, alert: false)
        }
    }

    @Test("each APNs file is the payload and headers APNsService.notifications builds, and the client decodes the payload")
    func apnsPayloads() throws {
        let paths = try Self.files("pushes", prefix: "apns-")
        #expect(paths.count == 4)
        for path in paths {
            let vector = try Self.load(path)
            let build = try #require(vector["build"] as? [String: Any])
            let edition = try Self.edition(try #require(build["edition"] as? String), publicationTitle: build["publicationTitle"] as? String)
            let tier = try Self.parse(build["tier"], PaperboyCore.ImageTier.init(rawValue:))
            let pushes = try APNsService.notifications(
                for: edition,
                kind: try Self.parse(build["kind"], BroadcastProgress.Wave.Kind.init(rawValue:)),
                wave: try #require(build["wave"] as? Int),
                sentAt: (build["sentAt"] as? String).flatMap(Self.instant)
            )
            let push = try #require(pushes[tier], "\(path)")
            let payload = try #require(try JSONSerialization.jsonObject(with: Data(push.payload)) as? [String: Any])
            #expect(Self.same(payload, vector["payload"]), "\(path): the server sends \(Self.text(payload))")
            var headers: [String: String] = [:]
            for header in push.headers { headers[header.name] = header.value }
            #expect(headers == vector["headers"] as? [String: String], "\(path)")
            var userInfo: [AnyHashable: Any] = [:]
            for (key, value) in payload { userInfo[key] = value }
            let wakeUp = try #require(try EditionWakeUp.decode(userInfo: userInfo), "\(path)")
            Self.expect(wakeUp, equals: try #require(vector["wakeUp"] as? [String: Any]), path, alert: true)
        }
    }

    @Test("the Swift client refuses the refused FCM data by key (but for the cases marked stricter), and ignores other messages")
    func refusedData() throws {
        let vector = try Self.load("pushes/fcm-data-refused.json")
        for item in try #require(vector["cases"] as? [[String: Any]]) where item["stricterThanSwiftClient"] as? Bool != true {
            let data = try #require(item["data"] as? [String: String])
            do {
                _ = try EditionWakeUp.decode(data: data)
                Issue.record("\(item["name"] ?? "?"): decoded")
            } catch {
                #expect((error as? WakeUpError)?.key == item["refusal"] as? String, "\(item["name"] ?? "?"): \(error)")
            }
        }
        for data in try #require(vector["notOurs"] as? [[String: String]]) {
            #expect(try EditionWakeUp.decode(data: data) == nil)
        }
        for item in try #require(vector["accepted"] as? [[String: Any]]) {
            let data = try #require(item["data"] as? [String: String])
            #expect(try EditionWakeUp.decode(data: data)?.editionID == item["edition"] as? String, "\(item["name"] ?? "?")")
        }
    }

    @Test("receipt bodies: the Swift client writes each as the file says, the server decodes and accepts each")
    func receipts() throws {
        let vector = try Self.load("receipts.json")
        let cases = try #require(vector["cases"] as? [[String: Any]])
        for item in cases {
            let name = item["name"] as? String ?? "?"
            let input = try #require(item["input"] as? [String: Any])
            let receipt = PaperboyClient.ReceiptReport(
                editionID: try #require(input["editionId"] as? String),
                result: try Self.parse(input["result"], ClientReceiptResult.init(rawValue:)),
                bytes: (input["bytes"] as? NSNumber)?.int64Value ?? 0,
                seconds: (input["seconds"] as? NSNumber)?.doubleValue ?? 0,
                network: (input["network"] as? String).flatMap(PaperboyClient.ReceiptReport.Network.init(rawValue:)),
                charging: input["charging"] as? Bool,
                lowPowerMode: input["lowPowerMode"] as? Bool,
                backgroundRefresh: input["backgroundRefresh"] as? Bool,
                wave: input["wave"] as? Int,
                secondsFromPush: (input["secondsFromPush"] as? NSNumber)?.doubleValue
            )
            let written = try JSONSerialization.jsonObject(with: JSONEncoder().encode(receipt))
            #expect(Self.same(written, item["body"]), "\(name): the Swift client writes \(Self.text(written))")
            let body = try JSONSerialization.data(withJSONObject: try #require(item["body"]))
            let stored = try JSONDecoder().decode(PaperboyStore.ReceiptReport.self, from: body)
            try stored.context.validate()
            #expect(stored.editionID.uuidString.lowercased() == input["editionId"] as? String, "\(name)")
            #expect(stored.result.rawValue == input["result"] as? String, "\(name)")
            #expect(stored.bytes >= 0 && stored.seconds >= 0, "\(name)")
            #expect(stored.context.wave == input["wave"] as? Int, "\(name)")
        }
        for item in try #require(vector["secondsFromPush"] as? [[String: Any]]) {
            let wakeUp = EditionWakeUp(
                editionID: "0b4ed6a3-3c2e-4b8e-9a55-0d2f3f1b7c11",
                manifestPath: "/v1/editions/0b4ed6a3-3c2e-4b8e-9a55-0d2f3f1b7c11",
                tier: .large,
                deadline: Date(timeIntervalSince1970: 1_795_392_000),
                fetch: [],
                wave: 1,
                sentAt: (item["sentAt"] as? String).flatMap(Self.instant)
            )
            let seconds = wakeUp.secondsFromPush(arrival: try #require(Self.date(item["arrival"])), now: try #require(Self.date(item["now"])))
            #expect(seconds == (item["secondsFromPush"] as? NSNumber)?.doubleValue, "\(item["name"] ?? "?")")
        }
    }

    @Test("registration bodies: the Swift client writes each as the file says, the server decodes each to the same values")
    func registrations() throws {
        for item in try #require(try Self.load("registrations.json")["cases"] as? [[String: Any]]) {
            let name = item["name"] as? String ?? "?"
            let input = try #require(item["input"] as? [String: Any])
            let route = try #require(input["route"] as? [String: String])
            let clientRoute: PaperboyClient.DeviceRegistration.Route
            if route["provider"] == "fcm" {
                clientRoute = .fcm(try #require(ClientDevicePlatform(rawValue: route["platform"] ?? "")))
            } else {
                clientRoute = .apns(try #require(ClientAPNsEnvironment(rawValue: route["environment"] ?? "")))
            }
            let registration = PaperboyClient.DeviceRegistration(
                route: clientRoute,
                subscriptions: try #require(input["subscriptions"] as? [String]),
                timeZone: try Self.parse(input["timeZone"], TimeZone.init(identifier:)),
                tier: try Self.parse(input["tier"], ClientTier.init(rawValue:)),
                autoDownload: input["autoDownload"] as? Bool ?? true,
                alertsAuthorized: try #require(input["alertsAuthorized"] as? Bool),
                notifyWhenReady: input["notifyWhenReady"] as? Bool ?? false,
                editionAlerts: input["editionAlerts"] as? Bool ?? false,
                appVersion: input["appVersion"] as? String,
                osVersion: input["osVersion"] as? String,
                model: input["model"] as? String,
                locale: input["locale"] as? String
            )
            let written = try JSONSerialization.jsonObject(with: JSONEncoder().encode(registration))
            #expect(Self.same(written, item["body"]), "\(name): the Swift client writes \(Self.text(written))")
            let body = try #require(item["body"] as? [String: Any])
            let server = try JSONDecoder().decode(PaperboyStore.DeviceRegistration.self, from: JSONSerialization.data(withJSONObject: body))
            #expect(server.provider.rawValue == body["provider"] as? String, "\(name)")
            #expect(server.platform.rawValue == body["platform"] as? String, "\(name)")
            #expect(server.environment.rawValue == (body["environment"] as? String ?? "production"), "\(name)")
            #expect(server.subscriptions == body["subscriptions"] as? [String], "\(name)")
            #expect(server.timeZone == body["timeZone"] as? String, "\(name)")
            #expect(server.tier.rawValue == body["tier"] as? String, "\(name)")
            #expect(server.autoDownload == body["autoDownload"] as? Bool, "\(name)")
            #expect(server.alertsAuthorized == body["alertsAuthorized"] as? Bool, "\(name)")
            #expect(server.notifyWhenReady == body["notifyWhenReady"] as? Bool, "\(name)")
            #expect(server.editionAlerts == body["editionAlerts"] as? Bool, "\(name)")
            #expect(server.appVersion == body["appVersion"] as? String, "\(name)")
            #expect(server.model == body["model"] as? String, "\(name)")
            #expect(server.locale == body["locale"] as? String, "\(name)")
        }
    }

    @Test("each status gets the file's reaction from APIReaction")
    func reactions() throws {
        for item in try #require(try Self.load("reactions.json")["cases"] as? [[String: Any]]) {
            let reaction: APIReaction =
                if let status = item["status"] as? Int {
                    APIReaction.to(status: status, field: item["field"] as? String, retryAfter: item["retryAfter"] as? Int)
                } else {
                    PaperboyAPIError(status: nil, message: "no answer").reaction
                }
            let name: String =
                switch reaction {
                case .done: "done"
                case .registerThenRetry: "registerThenRetry"
                case .stopUntilNewKey: "stopUntilNewKey"
                case .retryAfter(let seconds): "retryAfter \(seconds)"
                case .retryLater: "retryLater"
                case .drop: "drop"
                }
            let expected = [item["reaction"] as? String, (item["seconds"] as? Int).map(String.init)].compactMap { $0 }.joined(separator: " ")
            #expect(name == expected, "\(Self.text(item))")
        }
    }

    @Test("the receipt outbox's scenarios hold step by step")
    func outbox() throws {
        let vector = try Self.load("outbox.json")
        let start = Date(timeIntervalSince1970: try #require((vector["start"] as? NSNumber)?.doubleValue))
        func at(_ value: Any?) throws -> Date {
            start.addingTimeInterval(try #require((value as? NSNumber)?.doubleValue))
        }
        func receipt(_ value: Any?) throws -> PaperboyClient.ReceiptReport {
            let spec = try #require(value as? [String: String])
            let result = try #require(ClientReceiptResult(rawValue: spec["result"] ?? ""))
            return PaperboyClient.ReceiptReport(
                editionID: try #require(spec["edition"]),
                result: result,
                bytes: result == .newData ? 1_000 : 0,
                seconds: 2,
                wave: 1,
                secondsFromPush: 5
            )
        }
        let scenarios = try #require(vector["scenarios"] as? [[String: Any]])
        #expect(scenarios.count >= 7)
        for scenario in scenarios {
            var outbox = ReceiptOutbox()
            for (index, step) in try #require(scenario["steps"] as? [[String: Any]]).enumerated() {
                let what = "\(scenario["name"] ?? "?"), step \(index): \(Self.text(step))"
                switch step["op"] as? String {
                case "add":
                    let added = outbox.add(try receipt(step["receipt"]), at: try at(step["at"]))
                    #expect(added == step["added"] as? Bool, "\(what)")
                case "due":
                    let due = outbox.due(at: try at(step["at"]))
                    try Self.expect(due, step, what, receipt: receipt)
                case "record":
                    let answer = (step["answer"] as? [String: Any]).map {
                        ReceiptOutbox.Answer(status: $0["status"] as? Int ?? 0, field: $0["field"] as? String, retryAfter: $0["retryAfter"] as? Int)
                    }
                    let jitter = try #require((step["jitter"] as? NSNumber)?.doubleValue)
                    let verdict = outbox.record(answer, for: try receipt(step["receipt"]), at: try at(step["at"]), jitter: jitter)
                    #expect("\(verdict)" == step["verdict"] as? String, "\(what)")
                    if let paused = step["pausedUntil"] {
                        let until: Date? = try (paused is NSNull ? nil : at(paused))
                        #expect(outbox.pausedUntil == until, "\(what)")
                    }
                    if let failures = step["failures"] as? Int {
                        #expect(outbox.failures == failures, "\(what)")
                    }
                case "registered":
                    outbox.registered()
                case "reload":
                    outbox = try JSONDecoder().decode(ReceiptOutbox.self, from: JSONEncoder().encode(outbox))
                case "entries":
                    try Self.expect(outbox.entries.map(\.receipt), step, what, receipt: receipt)
                default:
                    Issue.record("unknown op: \(what)")
                }
            }
        }
    }

    /// A step's `receipts`, or `count` and `first`, against the receipts the outbox answered.
    static func expect(
        _ receipts: [PaperboyClient.ReceiptReport],
        _ step: [String: Any],
        _ what: String,
        receipt: (Any?) throws -> PaperboyClient.ReceiptReport
    ) throws {
        if let expected = step["receipts"] as? [Any] {
            let wanted = try expected.map(receipt)
            #expect(receipts == wanted, "\(what)")
        }
        if let count = step["count"] as? Int {
            #expect(receipts.count == count, "\(what)")
        }
        if let first = step["first"] as? String {
            #expect(receipts.first?.editionID == first, "\(what)")
        }
    }
}
