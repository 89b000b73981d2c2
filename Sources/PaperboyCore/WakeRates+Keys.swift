import Foundation

extension WakeRates {
    /// A device model's family: an Apple model identifier up to its comma (`iPhone15,2` → `iPhone15`,
    /// `iPad13,1` → `iPad13`: one hardware generation, whatever its size or radio), any other model as the
    /// device reports it (Android's `Build.MODEL`, e.g. `Pixel 8`, `SM-S918B`); `unknown` without one.
    public static func modelFamily(_ model: String?) -> String {
        let trimmed = (model ?? "").trimmingCharacters(in: .whitespaces)
        let family = trimmed.split(separator: ",", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        return family.isEmpty ? unknownKey : family
    }

    /// The OS and its major version: the leading number of the version the device reports (`17.4.1` →
    /// `iOS 17`, `14` → `Android 14`); `iOS unknown` or `Android unknown` without one; `unknown` without a
    /// platform.
    public static func osMajor(platform: DevicePlatform?, version: String?) -> String {
        guard let platform else { return unknownKey }
        let name = platform == .ios ? "iOS" : "Android"
        let digits = (version ?? "").trimmingCharacters(in: .whitespaces).prefix(while: \.isNumber)
        guard let major = Int(digits) else { return "\(name) \(unknownKey)" }
        return "\(name) \(major)"
    }

    /// `true`, `false`, or `unknown`.
    public static func flagKey(_ value: Bool?) -> String {
        value.map { $0 ? "true" : "false" } ?? unknownKey
    }

    /// `00` to `23`, or `unknown` (a time zone PostgreSQL does not know).
    public static func hourKey(_ hour: Int?) -> String {
        guard let hour, (0...23).contains(hour) else { return unknownKey }
        return hour < 10 ? "0\(hour)" : "\(hour)"
    }
}
