import Foundation
import PaperboyCore

extension ReadyAtOpen {
    /// `81.2 % of 12,345 first opens after publication found the edition` and the waits, for reports: a share only
    /// from ``ReadyAtOpen/minimum`` opens, as wake rates.
    public var textItems: [String] {
        guard opens > 0 else { return ["no first opens after publication reported yet (apps report opens: POST /v1/devices/{token}/opens)"] }
        var items: [String] = []
        if let share {
            items.append("\(WakeRates.percent(share)) of \(TerminalText.grouped(opens)) first opens after publication found the edition")
        } else {
            items.append(
                "\(TerminalText.grouped(ready)) of \(TerminalText.grouped(opens)) first opens after publication found the edition (under \(Self.minimum): no share)"
            )
        }
        if let median = medianWaitMinutes, let p90 = p90WaitMinutes {
            items.append("\(TerminalText.grouped(waited)) waited: median \(Self.minutes(median)), 90 % within \(Self.minutes(p90))")
        } else if waited > 0 {
            items.append("\(TerminalText.grouped(waited)) waited")
        }
        if stillWaiting > 0 { items.append("\(TerminalText.grouped(stillWaiting)) without it yet") }
        return items
    }

    static func minutes(_ value: Double) -> String {
        value < 10 ? String(format: "%.1f min", value) : String(format: "%.0f min", value)
    }
}
