import Foundation
import PaperboyCore
import Testing

/// Where a new wave fits on a content origin that other broadcasts' waves hold, first come first served.
@Suite("Content origins: planning into what is left")
struct OriginCapacityTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    static func held(_ start: TimeInterval, _ end: TimeInterval, _ rate: Double, label: String = "morning") -> OriginCapacity.Commitment {
        .init(broadcastID: UUID(), wave: 1, label: label, start: t0.addingTimeInterval(start), end: t0.addingTimeInterval(end), rate: rate)
    }

    @Test("an idle origin: the wave starts when asked, at the rate asked")
    func idle() {
        let origin = OriginCapacity(name: "content-api", capacity: 2000, commitments: [])
        let placement = origin.place(devices: 60_000, rate: 1000, notBefore: Self.t0)
        #expect(placement == .init(start: Self.t0, rate: 1000, waitingFor: [], rateLowered: false))
        #expect(origin.note(for: placement, asked: Self.t0, askedRate: 1000) == nil)
    }

    @Test("room beside a running wave: it starts at once; no room: it waits for the wave holding the capacity")
    func firstComeFirstServed() {
        let running = Self.held(-60, 600, 1500)
        let origin = OriginCapacity(name: "content-api", capacity: 2000, commitments: [running])
        #expect(origin.place(devices: 30_000, rate: 500, notBefore: Self.t0).start == Self.t0)
        let waiting = origin.place(devices: 30_000, rate: 1000, notBefore: Self.t0)
        #expect(waiting.start == Self.t0.addingTimeInterval(600))
        #expect(waiting.waitingFor == [running])
        let note = origin.note(for: waiting, asked: Self.t0, askedRate: 1000) ?? ""
        #expect(note.contains("starts 600s after asked") && note.contains("content-api (2000/s)") && note.contains("morning wave 1 (1500/s)"))
    }

    @Test("a wave that would run into a later commitment waits until it fits for its whole length")
    func wholeLength() {
        // Room now, but a wave planned to start in 100 s takes it: a 300 s wave must wait until that one ends.
        let later = Self.held(100, 400, 1800)
        let origin = OriginCapacity(name: "content-api", capacity: 2000, commitments: [later])
        let placement = origin.place(devices: 300_000, rate: 1000, notBefore: Self.t0)
        #expect(placement.start == Self.t0.addingTimeInterval(400))
        let short = origin.place(devices: 50_000, rate: 1000, notBefore: Self.t0)
        #expect(short.start == Self.t0, "a wave that ends before the other starts goes now")
    }

    @Test("a rate above the capacity is lowered to it, and the note says so")
    func lowered() {
        let origin = OriginCapacity(name: "content-api", capacity: 2000, commitments: [])
        let placement = origin.place(devices: 100_000, rate: 5000, notBefore: Self.t0)
        #expect(placement.rate == 2000 && placement.rateLowered)
        #expect(origin.note(for: placement, asked: Self.t0, askedRate: 5000)?.contains("runs at 2000/s") == true)
    }

    @Test("the load at an instant is the sum of the commitments holding it then")
    func used() {
        let origin = OriginCapacity(name: "content-api", capacity: 3000, commitments: [Self.held(0, 100, 1000), Self.held(50, 150, 500)])
        #expect(origin.used(at: Self.t0.addingTimeInterval(10)) == 1000)
        #expect(origin.used(at: Self.t0.addingTimeInterval(60)) == 1500)
        #expect(origin.used(at: Self.t0.addingTimeInterval(100)) == 500)
        #expect(origin.used(at: Self.t0.addingTimeInterval(150)) == 0)
    }

    @Test("a capacity stored before it was bounded (5e-324 a second) paces at 0.01: the wave's length stays finite (it trapped serve)")
    func tinyCapacity() {
        let origin = OriginCapacity(name: "content-api", capacity: 5e-324, commitments: [])
        let placement = origin.place(devices: 1_000_000, rate: 100, notBefore: Self.t0)
        #expect(placement.rate == 0.01 && placement.start == Self.t0)
        #expect((Double(1_000_000) / placement.rate).isFinite)
    }
}
