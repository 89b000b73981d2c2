import Foundation

/// An edition's push, decoded from whichever shape it came in: Paperboy's keys beside `aps` in an APNs
/// payload, or FCM's data (string to string, so `fetch` is JSON text and `wave` digits), which FCM hands to an
/// Android app as `RemoteMessage.data` and to an iOS app registered through Firebase as the `userInfo` of a
/// background push.
///
/// ```swift
/// guard let wakeUp = try EditionWakeUp.decode(userInfo: userInfo) else { return completion(.noData) }  // not Paperboy's
/// ```
public struct EditionWakeUp: Sendable, Equatable {
    /// The edition's id (a lowercase UUID): the receipt's `editionId`.
    public var editionID: String
    /// The manifest's path on Paperboy's API (`/v1/editions/<id>`), relative to the API's base URL.
    public var manifestPath: String
    /// The tier whose bundles `fetch` lists: the device's own, or `small` in an alert for the extension.
    public var tier: ImageTier
    /// After it the edition is not worth downloading: stop, and post nothing.
    public var deadline: Date
    /// The tier's bundles, in the order to download them. Empty when the edition has no bundles of this tier:
    /// read the manifest and fall back (``EditionManifest/plan(for:)``).
    public var fetch: [URL]
    /// The push's wave (1 for the first, at most ``largestWave``), echoed in the receipt.
    public var wave: Int

    /// The largest wave a push carries: the server's `deliveries.wave` is a smallint, and the API refuses a receipt's
    /// wave outside 1...32767 (a receipt refused so is dropped: the edition would count as not delivered).
    public static let largestWave = 32_767
    /// When Paperboy sent the push; nil from a Paperboy that does not send it.
    public var sentAt: Date?
    /// Only in an alert for the Notification Service Extension (the ready alert, the alert last resort): the
    /// time and memory it has. Without it, an extension must not download.
    public var extensionLimits: ExtensionLimits?
    /// Whether the push is an alert (`aps.alert`), which iOS shows after the extension ran.
    public var isAlert: Bool

    /// What a Notification Service Extension has to fetch `fetch` in. Decoded from a push, each is cut to what iOS
    /// gives an extension (``longestExtensionSeconds``, ``largestExtensionMegabytes``), never below 0: the seconds are
    /// the extension's time budget, and one that outlasts iOS's would be killed before its receipt.
    public struct ExtensionLimits: Codable, Sendable, Equatable {
        public var seconds: Int
        public var megabytes: Int

        /// About 30 s: what iOS gives a Notification Service Extension.
        public static let longestExtensionSeconds = 30
        /// About 24 MB: the memory iOS gives a Notification Service Extension.
        public static let largestExtensionMegabytes = 24

        /// Limits from the network, cut to what iOS gives.
        static func bounded(seconds: Int, megabytes: Int) -> ExtensionLimits {
            ExtensionLimits(
                seconds: min(max(0, seconds), longestExtensionSeconds),
                megabytes: min(max(0, megabytes), largestExtensionMegabytes)
            )
        }

        public init(seconds: Int, megabytes: Int) {
            self.seconds = seconds
            self.megabytes = megabytes
        }
    }

    public init(
        editionID: String,
        manifestPath: String,
        tier: ImageTier,
        deadline: Date,
        fetch: [URL],
        wave: Int,
        sentAt: Date? = nil,
        extensionLimits: ExtensionLimits? = nil,
        isAlert: Bool = false
    ) {
        self.editionID = editionID
        self.manifestPath = manifestPath
        self.tier = tier
        self.deadline = deadline
        self.fetch = fetch
        self.wave = wave
        self.sentAt = sentAt
        self.extensionLimits = extensionLimits
        self.isAlert = isAlert
    }

    /// The push in an iOS app's `userInfo`, APNs' shape or FCM's.
    /// - Returns: nil when the push is not an edition's (no `edition` key): another kind of notification.
    /// - Throws: ``WakeUpError`` naming the key that is missing or malformed.
    public static func decode(userInfo: [AnyHashable: Any]) throws -> EditionWakeUp? {
        guard userInfo["edition"] != nil else { return nil }
        var keys = Keys()
        for (key, value) in userInfo {
            guard let name = key as? String else { continue }
            keys.values[name] = value
        }
        keys.isAlert = (userInfo["aps"] as? [String: Any])?["alert"] != nil
        return try keys.wakeUp()
    }

    /// The push as FCM's data (an Android app's `RemoteMessage.data`).
    /// - Returns: nil when the message is not an edition's (no `edition` key).
    /// - Throws: ``WakeUpError`` naming the key that is missing or malformed.
    public static func decode(data: [String: String]) throws -> EditionWakeUp? {
        guard data["edition"] != nil else { return nil }
        var keys = Keys()
        for (name, value) in data { keys.values[name] = value }
        return try keys.wakeUp()
    }

    /// Whether the deadline has passed at `now`: nothing is worth downloading or posting then.
    public func isExpired(at now: Date) -> Bool { now >= deadline }

    /// The receipt's `secondsFromPush` for a run at `now`: from ``sentAt`` when the push has it (on iOS the app
    /// runs when the push arrives, so only the send time says how long the system held it), else from
    /// `arrival`; 0 when the device's clock is behind Paperboy's, at most a day (the API's bound).
    public func secondsFromPush(arrival: Date, now: Date) -> Double {
        let seconds = now.timeIntervalSince(sentAt ?? arrival)
        return min(max(0, seconds.rounded()), 86_400)
    }

    /// The keys of either shape, read leniently as to type: APNs gives numbers and arrays, FCM text.
    private struct Keys {
        var values: [String: Any] = [:]
        var isAlert = false

        func wakeUp() throws -> EditionWakeUp {
            let edition = try text("edition")
            guard UUID(uuidString: edition) != nil else { throw WakeUpError(key: "edition", problem: "is not a UUID") }
            let manifest = try text("manifest")
            guard manifest.hasPrefix("/") else { throw WakeUpError(key: "manifest", problem: "is not a path") }
            guard let tier = ImageTier(rawValue: try text("tier")) else {
                throw WakeUpError(key: "tier", problem: "is none of small, medium, large")
            }
            guard let deadline = EditionWakeUp.date(try text("deadline")) else {
                throw WakeUpError(key: "deadline", problem: "is not an RFC 3339 time")
            }
            var sentAt: Date?
            if values["sentAt"] != nil {
                guard let date = EditionWakeUp.date(try text("sentAt")) else {
                    throw WakeUpError(key: "sentAt", problem: "is not an RFC 3339 time")
                }
                sentAt = date
            }
            return EditionWakeUp(
                editionID: edition.lowercased(),
                manifestPath: manifest,
                tier: tier,
                deadline: deadline,
                fetch: try urls("fetch"),
                wave: try wave(),
                sentAt: sentAt,
                extensionLimits: try limits("extension"),
                isAlert: isAlert
            )
        }

        func text(_ key: String) throws -> String {
            guard let value = values[key] else { throw WakeUpError(key: key, problem: "is missing") }
            guard let text = value as? String else { throw WakeUpError(key: key, problem: "is not text") }
            return text
        }

        /// The wave: 1 to ``EditionWakeUp/largestWave`` (a receipt with another is refused by the API).
        func wave() throws -> Int {
            let wave = try integer("wave")
            guard (1...EditionWakeUp.largestWave).contains(wave) else {
                throw WakeUpError(key: "wave", problem: "is not from 1 to \(EditionWakeUp.largestWave)")
            }
            return wave
        }

        /// A number (APNs), or its digits (FCM).
        func integer(_ key: String) throws -> Int {
            guard let value = values[key] else { throw WakeUpError(key: key, problem: "is missing") }
            if let text = value as? String, let number = Int(text) { return number }
            guard let number = Self.whole(value) else { throw WakeUpError(key: key, problem: "is not a whole number") }
            return number
        }

        /// A whole number as `JSONSerialization` or `userInfo` holds it (Int, Double or NSNumber).
        static func whole(_ value: Any?) -> Int? {
            switch value {
            case let number as Int: return number
            case let number as Double where number.rounded() == number && abs(number) < 1e15: return Int(number)
            case let number as NSNumber where !(value is String): return number.intValue
            default: return nil
            }
        }

        /// An array of URLs (APNs), or its JSON text (FCM).
        func urls(_ key: String) throws -> [URL] {
            let strings: [String]
            switch values[key] {
            case nil: throw WakeUpError(key: key, problem: "is missing")
            case let list as [String]: strings = list
            case let list as [Any]:
                guard let list = list as? [String] else { throw WakeUpError(key: key, problem: "is not a list of URLs") }
                strings = list
            case let text as String:
                guard let list = try? JSONDecoder().decode([String].self, from: Data(text.utf8)) else {
                    throw WakeUpError(key: key, problem: "is not the JSON text of a list of URLs")
                }
                strings = list
            default: throw WakeUpError(key: key, problem: "is not a list of URLs")
            }
            var urls: [URL] = []
            for string in strings {
                guard let url = URL(string: string), url.scheme != nil else { throw WakeUpError(key: key, problem: "holds '\(string)', not a URL") }
                urls.append(url)
            }
            return urls
        }

        /// An object (APNs), or its JSON text (FCM); nil when absent.
        func limits(_ key: String) throws -> ExtensionLimits? {
            switch values[key] {
            case nil: return nil
            case let object as [String: Any]:
                guard let seconds = Self.whole(object["seconds"]), let megabytes = Self.whole(object["megabytes"]) else {
                    throw WakeUpError(key: key, problem: "lacks seconds or megabytes")
                }
                return .bounded(seconds: seconds, megabytes: megabytes)
            case let text as String:
                guard let limits = try? JSONDecoder().decode(ExtensionLimits.self, from: Data(text.utf8)) else {
                    throw WakeUpError(key: key, problem: "is not the JSON text of {seconds, megabytes}")
                }
                return .bounded(seconds: limits.seconds, megabytes: limits.megabytes)
            default: throw WakeUpError(key: key, problem: "is not an object")
            }
        }
    }

    /// An RFC 3339 time, with or without fractional seconds.
    static func date(_ text: String) -> Date? {
        if let date = try? Date.ISO8601FormatStyle().parse(text) { return date }
        return try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text)
    }
}

/// A Paperboy push that cannot be used, naming its key: log it (it is a server or proxy bug) and answer the
/// system as for no data.
public struct WakeUpError: Error, Equatable, CustomStringConvertible {
    public var key: String
    public var problem: String

    public var description: String { "the push's \(key) \(problem)" }
}
