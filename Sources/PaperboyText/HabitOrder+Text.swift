import Foundation
import PaperboyCore

extension HabitOrder {
    /// One or two lines for `cohorts plan`: how many targets a reading habit places, and for the readers who
    /// habitually open inside the window, where their slots are.
    public func summary(timeZone: TimeZone) -> String {
        guard known > 0 else {
            return "habit order: no target has a known reading habit yet, so every slot is in hash order "
                + "(apps report opens: POST /v1/devices/{token}/opens; a habit is known after \(ReadingHabit.knownAfter) mornings)"
        }
        let share = targets > 0 ? Double(known) / Double(targets) : 0
        var text =
            "habit order: \(TerminalText.grouped(known)) of \(TerminalText.grouped(targets)) targets (\(String(format: "%.1f", share * 100)) %) "
            + "are placed by their reading habit, the others in hash order among them"
        let window =
            "\(TerminalText.clock(windowStart, timeZone: timeZone, fraction: false))–\(TerminalText.clock(windowEnd, timeZone: timeZone, fraction: false))"
        if insideWindow == 0 {
            text += "\nnone of them habitually opens inside the window (\(window))"
        } else if let firstSlot, let lastSlot {
            let before = Double(slottedBefore) / Double(insideWindow)
            text +=
                "\n\(TerminalText.grouped(insideWindow)) habitually open inside the window (\(window)): their slots "
                + "\(TerminalText.clock(firstSlot, timeZone: timeZone, fraction: false))–\(TerminalText.clock(lastSlot, timeZone: timeZone, fraction: false)), "
                + "\(TerminalText.grouped(slottedBefore)) (\(String(format: "%.1f", before * 100)) %) before their usual first open"
        }
        return text
    }
}
