import Foundation

/// A content origin's capacity and what running waves already hold of it: where a new wave fits, first come first
/// served. Pure: the Store reads the commitments, this decides.
///
/// Planning is only half of the promise: at send time every batch of the origin's broadcasts claims an exclusive
/// slot of the origin's shared timeline, so even waves planned later (follow-ups, an alert wave, catch-up after a
/// stall) never take the origin above its capacity. Planning into what remains makes a new broadcast's plan honest:
/// it says when the broadcast will actually run, and why.
public struct OriginCapacity: Sendable, Equatable {
    /// A running wave of another broadcast, holding `rate` of the origin from `start` to `end`.
    public struct Commitment: Sendable, Equatable {
        public var broadcastID: UUID
        public var wave: Int
        /// What an operator recognises it by, e.g. `morning 2026-11-26 (app 1)`.
        public var label: String
        public var start: Date
        public var end: Date
        public var rate: Double

        public init(broadcastID: UUID, wave: Int, label: String, start: Date, end: Date, rate: Double) {
            self.broadcastID = broadcastID
            self.wave = wave
            self.label = label
            self.start = start
            self.end = end
            self.rate = rate
        }
    }

    /// Where a wave goes.
    public struct Placement: Sendable, Equatable {
        public var start: Date
        public var rate: Double
        /// The commitments it waits for; empty when it starts when asked.
        public var waitingFor: [Commitment]
        /// Its rate was lowered to the origin's capacity.
        public var rateLowered: Bool

        public init(start: Date, rate: Double, waitingFor: [Commitment], rateLowered: Bool) {
            self.start = start
            self.rate = rate
            self.waitingFor = waitingFor
            self.rateLowered = rateLowered
        }
    }

    public var name: String
    /// Wake-ups per second the origin serves.
    public var capacity: Double
    public var commitments: [Commitment]

    public init(name: String, capacity: Double, commitments: [Commitment]) {
        self.name = name
        self.capacity = capacity
        self.commitments = commitments
    }

    /// The earliest start at or after `notBefore` from which `devices` devices at `rate` (lowered to the capacity)
    /// fit beside the commitments for the whole wave.
    public func place(devices: Int, rate requested: Double, notBefore: Date) -> Placement {
        // A capacity stored before it was bounded (below 0.01 a second) paces at 0.01: a wave's length stays finite.
        let capacity = Swift.max(self.capacity, BroadcastOptions.capacityRange.lowerBound)
        let rate = min(requested, capacity)
        let duration = rate > 0 ? Double(devices) / rate : 0
        let candidates = ([notBefore] + commitments.map(\.end).filter { $0 > notBefore }).sorted()
        // Within a relative 1e-9 of the capacity counts as fitting: rates are sums of doubles.
        let room = capacity * (1 + 1e-9)
        for start in candidates {
            let end = start.addingTimeInterval(duration)
            // The load changes only where a commitment starts: checking there (and at the start) checks everywhere.
            let instants = [start] + commitments.map(\.start).filter { $0 > start && $0 < end }
            let fits = instants.allSatisfy { instant in
                used(at: instant) + rate <= room
            }
            if fits {
                let waited = commitments.filter { $0.start < start && $0.end > notBefore }
                return Placement(start: start, rate: rate, waitingFor: start > notBefore ? waited : [], rateLowered: rate < requested)
            }
        }
        // Unreachable: the last candidate is after every commitment ends.
        return Placement(start: candidates.last ?? notBefore, rate: rate, waitingFor: commitments, rateLowered: rate < requested)
    }

    /// The rate the commitments hold at `instant`.
    public func used(at instant: Date) -> Double {
        commitments.filter { $0.start <= instant && instant < $0.end }.reduce(0) { $0 + $1.rate }
    }

    /// Why a placement starts late or runs slower than asked, for the plan's note; nil when it does neither.
    public func note(for placement: Placement, asked: Date, askedRate: Double) -> String? {
        var parts: [String] = []
        if placement.rateLowered {
            parts.append("runs at \(Self.format(placement.rate))/s, the capacity of origin \(name), not the \(Self.format(askedRate))/s asked")
        }
        if placement.start > asked && !placement.waitingFor.isEmpty {
            let holders = placement.waitingFor.map { "\($0.label) wave \($0.wave) (\(Self.format($0.rate))/s)" }
            parts.append(
                "starts \(Int(placement.start.timeIntervalSince(asked).rounded(.up)))s after asked: origin \(name) (\(Self.format(capacity))/s) "
                    + "is held by " + holders.joined(separator: ", ")
            )
        }
        return parts.isEmpty ? nil : parts.joined(separator: "; ")
    }

    private static func format(_ rate: Double) -> String {
        rate == rate.rounded() ? String(Int(rate)) : String(format: "%.1f", rate)
    }
}
