import Foundation
import PaperboyCore
import Testing

@testable import PaperboyBroadcast
@testable import PaperboyStore

/// A worker's own batches are not reported lost when a renewal misses them because they were just recorded.
@Suite("Held batches and lease renewal")
struct HeldBatchTests {
    static func batch(_ id: Int64) -> LeasedBatch {
        LeasedBatch(
            id: id,
            broadcastID: UUID(),
            wave: 1,
            kind: .background,
            cohort: 0,
            firstKey: 0,
            lastKey: 10,
            firstOrdinal: 0,
            devices: 10,
            cohortStart: Date(timeIntervalSince1970: 0),
            rate: 10,
            editionID: UUID(),
            appID: 1,
            publicationID: 1,
            environment: .production,
            maxPushesPerDevice: 3,
            deadline: Date(timeIntervalSince1970: 3600),
            leases: 1,
            slotStart: Date(timeIntervalSince1970: 0)
        )
    }

    @Test("a batch the renewal missed is lost only while it is held and not being recorded")
    func lostOnlyWhenTakenOver() {
        let renewed = [Self.batch(1), Self.batch(2), Self.batch(3), Self.batch(4)]
        var held: [Int64: HeldBatch] = [:]
        held[1] = HeldBatch(batch: renewed[0])
        held[2] = HeldBatch(batch: renewed[1])
        held[3] = HeldBatch(batch: renewed[2], recording: true)
        // 1 was renewed; 2 was taken over; 3 was recorded (done) just before the renewal; 4 was recorded and let go.
        let lost = HeldBatch.lost(renewed: renewed, still: [1], held: held)
        #expect(lost.map(\.id) == [2])
    }
}
