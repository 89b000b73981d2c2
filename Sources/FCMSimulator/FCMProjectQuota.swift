import Foundation

/// A project's "messages per minute" quota over a sliding 60-second window (one-second buckets), so that its
/// minutes are not aligned to the clock, as FCM's are not. Pure: the time is a parameter.
struct FCMProjectQuota: Sendable {
    enum Verdict: Equatable {
        case admitted
        /// Over the quota: seconds until the window has room again (at least 1).
        case exceeded(retryAfter: Int)
    }

    let messagesPerMinute: Int
    /// Requests per second; `seconds[i]` says which UNIX second `counts[i]` belongs to.
    private var counts = [Int](repeating: 0, count: 60)
    private var seconds = [Int64](repeating: .min, count: 60)

    init(messagesPerMinute: Int) {
        self.messagesPerMinute = messagesPerMinute
    }

    /// Counts a request at `now` unless the last 60 seconds (this one included) already hold the quota.
    mutating func admit(at now: Date) -> Verdict {
        let second = Int64(now.timeIntervalSince1970.rounded(.down))
        var total = 0
        var oldest = second
        for index in 0..<60 where seconds[index] > second - 60 && seconds[index] <= second {
            total += counts[index]
            if counts[index] > 0 { oldest = min(oldest, seconds[index]) }
        }
        guard total < messagesPerMinute else { return .exceeded(retryAfter: Int(max(1, oldest + 60 - second))) }
        let slot = Int(((second % 60) + 60) % 60)
        if seconds[slot] != second {
            seconds[slot] = second
            counts[slot] = 0
        }
        counts[slot] += 1
        return .admitted
    }
}
