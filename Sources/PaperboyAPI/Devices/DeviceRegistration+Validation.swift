import Foundation
import PaperboyCore
import PaperboyStore

extension DeviceRegistration {
    /// The IANA zone names, read once: `TimeZone(identifier:)` reads the zone file on every call, which
    /// showed in registration throughput.
    static let timeZoneNames: Set<String> = Set(TimeZone.knownTimeZoneIdentifiers).union(["UTC", "Etc/UTC"])

    /// Checks what JSON decoding cannot: a real IANA time zone, sane sizes.
    func validate() throws(APIError) {
        guard platform.isServed(by: provider) else {
            throw .invalid("platform", "APNs serves iOS devices only; an Android device registers with \"provider\": \"fcm\"")
        }
        guard provider == .apns || environment == .production else {
            throw .invalid(
                "environment",
                "FCM has no sandbox: an FCM device's environment is production (test with a separate Firebase project and app)"
            )
        }
        guard Self.timeZoneNames.contains(timeZone) else {
            throw .invalid("timeZone", "timeZone must be an IANA time zone name, like Asia/Tokyo")
        }
        guard subscriptions.count <= 32 else {
            throw .invalid("subscriptions", "a device subscribes to at most 32 publications")
        }
        for (index, slug) in subscriptions.enumerated() where slug.isEmpty || slug.codePoints > 63 {
            throw .invalid("subscriptions[\(index)]", "a publication id is 1 to 63 characters")
        }
        let limits: [(String, String?, Int)] = [
            ("appVersion", appVersion, 64), ("osVersion", osVersion, 64), ("model", model, 64), ("locale", locale, 35),
        ]
        for (field, value, limit) in limits where (value?.codePoints ?? 0) > limit {
            throw .invalid(field, "\(field) is at most \(limit) characters")
        }
    }
}
