import NIOCore
import Testing

@testable import APNs

@Suite("Connection pool decisions")
struct APNsConnectionPoolTests {
    @Test("a connection that never got up, or went away soon after without answering, is a failed connect for the backoff")
    func endedAsFailure() {
        let now = NIODeadline.now()
        #expect(APNsConnectionPool.endedAsFailure(readyAt: nil, answered: false, endedAt: now))
        #expect(APNsConnectionPool.endedAsFailure(readyAt: now - .milliseconds(5), answered: false, endedAt: now), "SETTINGS then GOAWAY")
        #expect(!APNsConnectionPool.endedAsFailure(readyAt: now - .milliseconds(5), answered: true, endedAt: now), "it answered")
        #expect(!APNsConnectionPool.endedAsFailure(readyAt: now - .seconds(30), answered: false, endedAt: now), "it lasted")
    }
}
