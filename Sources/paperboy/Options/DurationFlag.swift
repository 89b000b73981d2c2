import ArgumentParser
import Foundation
import PaperboyCore

/// A duration flag's text read one way for every flag that takes one: `Nd` for N days (more than 0, at most 36,500:
/// a hundred years), else what `StaggerPlan.seconds(parsing:)` reads (`36h`, `90m`, `30s`, seconds). Bounded where it
/// is parsed: `1e300d` was read as 8.6e304 seconds and trapped converting it to a `Duration`.
enum DurationFlag {
    /// The longest number of days a flag takes.
    static let maximumDays = 36_500.0

    /// - Throws: `ValidationError` with `refusal` when `text` is neither.
    static func seconds(_ text: String, refusal: @autoclosure () -> String) throws -> TimeInterval {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        if trimmed.hasSuffix("d"), let days = Double(trimmed.dropLast()), days.isFinite, days > 0, days <= maximumDays {
            return days * 86_400
        }
        do { return try StaggerPlan.seconds(parsing: trimmed) } catch { throw ValidationError(refusal()) }
    }

    /// A listener's timeout (`serve --idle-timeout`, `--body-timeout`): a duration from 1 s to 1 h.
    static func listenerTimeout(_ text: String, flag: String) throws -> TimeInterval {
        let seconds: TimeInterval
        do { seconds = try StaggerPlan.seconds(parsing: text) } catch { throw ValidationError("\(flag): \(error)") }
        guard (1...3600).contains(seconds) else { throw ValidationError("\(flag): between 1s and 1h, got \(text)") }
        return seconds
    }
}
