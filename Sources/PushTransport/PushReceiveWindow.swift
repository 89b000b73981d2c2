/// The connection-level receive window of one HTTP/2 connection to APNs, as a pure policy: given the
/// window NIO reports after each inbound frame, how much to give back in a connection WINDOW_UPDATE.
///
/// It follows the window NIO reports, not the DATA frames the connection handler sees: NIO drops the
/// frames of streams the client already reset (answers arriving after a request timeout) before they
/// reach the handler, yet they use the connection window all the same. Counting only the frames it saw,
/// a connection starved after 64 KiB of late answers: error bodies stopped arriving while PINGs kept the
/// connection looking healthy.
public struct PushReceiveWindow: Sendable, Equatable {
    /// The window kept open. HTTP/2 starts every connection at 65,535 bytes.
    public let target: Int

    public init(target: Int = 65_535) {
        self.target = target
    }

    /// The WINDOW_UPDATE increment that reopens the window to ``target`` when it is `window` bytes, or
    /// nil while more than half of it is open (one update per half window, not one per frame).
    public func increment(forWindow window: Int) -> Int? {
        window <= target / 2 ? target - window : nil
    }
}
