import Foundation
import PaperboyCore

/// A wave of a broadcast as stored.
public struct StoredWave: Sendable, Equatable {
    public var wave: Int
    public var kind: BroadcastProgress.Wave.Kind
    public var start: Date
    /// Sends per second across all workers; 0 for a wave planned with nobody in it.
    public var rate: Double
    public var finished: Bool

    public init(wave: Int, kind: BroadcastProgress.Wave.Kind, start: Date, rate: Double, finished: Bool) {
        self.wave = wave
        self.kind = kind
        self.start = start
        self.rate = rate
        self.finished = finished
    }
}
