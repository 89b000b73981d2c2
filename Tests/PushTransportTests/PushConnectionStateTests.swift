import PushTransport
import Testing

@Suite("Connection stream state")
struct PushConnectionStateTests {
    @Test("one stream until the server raises the limit; never more than the limit")
    func streamLimit() {
        var state = PushConnectionState<Int>()
        let first = state.reserve(1)
        let second = state.reserve(2)
        #expect(first)
        #expect(!second, "APNs allows one stream before a valid token was seen")
        state.written(1, streamID: 1)
        state.answered(1)
        state.settingsChanged(maxConcurrentStreams: 3)
        let raised = [2, 3, 4, 5].map { state.reserve($0) }
        #expect(raised == [true, true, true, false])
        #expect(state.inFlight == 3)
        state.settingsChanged(maxConcurrentStreams: 2)
        state.answered(2)
        let held = state.reserve(5)
        #expect(!held, "a lowered limit holds new streams until the count is under it")
        state.answered(3)
        let released = state.reserve(5)
        #expect(released)
    }

    @Test("GOAWAY returns exactly the requests above the last stream id and those never written")
    func goAway() {
        var state = PushConnectionState<String>(initialMaxConcurrentStreams: 10)
        for (index, name) in ["a", "b", "c", "d"].enumerated() {
            let reserved = state.reserve(name)
            #expect(reserved)
            if name != "d" { state.written(name, streamID: 2 * index + 1) }  // a:1, b:3, c:5; d never written
        }
        let resend = state.goAway(lastStreamID: 3)
        #expect(Set(resend) == ["c", "d"])
        #expect(state.isDraining)
        let late = state.reserve("e")
        #expect(!late, "nothing new starts on a connection that received GOAWAY")
        #expect(state.inFlight == 2, "a and b may still be answered")
    }

    @Test("a dropped connection resends what was never written and reports written requests as unknown")
    func closed() {
        var state = PushConnectionState<Int>(initialMaxConcurrentStreams: 10)
        let reserved = (1...4).map { state.reserve($0) }
        #expect(reserved.allSatisfy { $0 })
        state.written(1, streamID: 1)
        state.written(2, streamID: 3)
        state.answered(1)
        let (resend, unknown) = state.closed()
        #expect(Set(resend) == [3, 4])
        #expect(unknown == [2])
        #expect(state.inFlight == 0)
    }

    @Test("a refused stream is sent again; another reset leaves the fate unknown")
    func resets() {
        var state = PushConnectionState<Int>(initialMaxConcurrentStreams: 10)
        let reserved = [state.reserve(1), state.reserve(2)]
        #expect(reserved == [true, true])
        state.written(1, streamID: 1)
        state.written(2, streamID: 3)
        let refused = state.streamReset(1, refused: true)
        let reset = state.streamReset(2, refused: false)
        let again = state.streamReset(2, refused: false)
        #expect(refused == .resend)
        #expect(reset == .fateUnknown)
        #expect(again == .none)
    }
}
