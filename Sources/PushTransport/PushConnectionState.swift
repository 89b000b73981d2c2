/// The stream bookkeeping of one HTTP/2 connection to APNs, as a pure state machine: the connection
/// handler feeds it events and acts on what it returns, and tests drive it without sockets.
///
/// It answers the questions that decide whether a notification is lost or sent twice:
/// - may another stream open now (the server's `SETTINGS_MAX_CONCURRENT_STREAMS`, which APNs keeps at 1
///   until it has seen a valid provider token, then raises)?
/// - after `GOAWAY(lastStreamID)`: which requests the server did not process (never written, or on a
///   stream above `lastStreamID`) and must go out again on another connection?
/// - after the connection drops: which requests were never written (send again) and which were written
///   but unanswered, whose fate is unknown (report, never silently resend or lose)?
public struct PushConnectionState<RequestID: Hashable & Sendable>: Sendable {
    private enum Progress: Equatable {
        /// Holds a stream slot; headers not yet written.
        case reserved
        /// Written on this stream.
        case written(streamID: Int)
    }

    /// The server's current limit; APNs starts at 1.
    public private(set) var maxConcurrentStreams: Int
    /// After `GOAWAY` or a close, nothing new may start here.
    public private(set) var isDraining = false
    private var requests: [RequestID: Progress] = [:]

    public init(initialMaxConcurrentStreams: Int = 1) {
        self.maxConcurrentStreams = initialMaxConcurrentStreams
    }

    /// Requests holding a stream slot.
    public var inFlight: Int { requests.count }

    /// Whether another request may take a stream now.
    public var hasCapacity: Bool { !isDraining && requests.count < maxConcurrentStreams }

    /// Takes a stream slot for `request`; false when the connection is full or draining (the caller queues).
    public mutating func reserve(_ request: RequestID) -> Bool {
        guard hasCapacity, requests[request] == nil else { return false }
        requests[request] = .reserved
        return true
    }

    /// The request's headers went out on `streamID`.
    public mutating func written(_ request: RequestID, streamID: Int) {
        guard requests[request] != nil else { return }
        requests[request] = .written(streamID: streamID)
    }

    /// The server answered (any status): the slot is free and the request must never be sent again.
    public mutating func answered(_ request: RequestID) {
        requests[request] = nil
    }

    /// The server changed `SETTINGS_MAX_CONCURRENT_STREAMS`. Streams already open above a lowered limit
    /// finish; new ones wait until the count is under it.
    public mutating func settingsChanged(maxConcurrentStreams: Int) {
        self.maxConcurrentStreams = max(0, maxConcurrentStreams)
    }

    /// The server reset a stream. `REFUSED_STREAM` means it did no work: the request goes out again.
    /// Any other reset leaves its fate unknown.
    public mutating func streamReset(_ request: RequestID, refused: Bool) -> Outcome {
        guard requests.removeValue(forKey: request) != nil else { return .none }
        return refused ? .resend : .fateUnknown
    }

    /// `GOAWAY`: requests the server did not process are returned to be sent again elsewhere; requests on
    /// streams up to `lastStreamID` stay and may still be answered.
    public mutating func goAway(lastStreamID: Int) -> [RequestID] {
        isDraining = true
        var resend: [RequestID] = []
        for (request, progress) in requests {
            switch progress {
            case .reserved:
                resend.append(request)
            case .written(let streamID) where streamID > lastStreamID:
                resend.append(request)
            case .written:
                continue
            }
        }
        for request in resend { requests[request] = nil }
        return resend
    }

    /// The connection closed: requests never written go out again; written, unanswered ones have an
    /// unknown fate.
    public mutating func closed() -> (resend: [RequestID], fateUnknown: [RequestID]) {
        isDraining = true
        var resend: [RequestID] = []
        var unknown: [RequestID] = []
        for (request, progress) in requests {
            if progress == .reserved { resend.append(request) } else { unknown.append(request) }
        }
        requests.removeAll()
        return (resend, unknown)
    }

    public enum Outcome: Equatable, Sendable {
        case none
        case resend
        case fateUnknown
    }
}
