/// Retries of one batch that go out together.
public struct PushRetryWave: Equatable, Sendable {
    /// From the end of the attempt that failed.
    public var delay: Duration
    public var positions: [Int]

    public init(delay: Duration, positions: [Int]) {
        self.delay = delay
        self.positions = positions
    }

    /// Orders the retries of one batch into waves by their own backoffs, so that a batch's retries spread
    /// out as their jitter says instead of all going out after the longest backoff among them; retries
    /// due within `resolution` of the first of a wave go out with it, as one batch.
    ///
    /// - Parameter retries: each retried delivery's position in its batch and its backoff.
    /// - Returns: the waves, soonest first; each waits for the longest backoff among its members (none
    ///   goes out early) and lists their positions in ascending order.
    public static func waves(_ retries: [(position: Int, delay: Duration)], resolution: Duration) -> [PushRetryWave] {
        var waves: [PushRetryWave] = []
        var firstDelay = Duration.zero
        for retry in retries.sorted(by: { ($0.delay, $0.position) < ($1.delay, $1.position) }) {
            if let last = waves.indices.last, retry.delay <= firstDelay + resolution {
                waves[last].delay = retry.delay
                waves[last].positions.append(retry.position)
            } else {
                firstDelay = retry.delay
                waves.append(PushRetryWave(delay: retry.delay, positions: [retry.position]))
            }
        }
        for index in waves.indices { waves[index].positions.sort() }
        return waves
    }

    /// Sends the retries of one batch wave by wave: each wave after its delay, all waves at once, `send` given
    /// the wave's positions.
    ///
    /// - Parameter cancelled: told the positions of a wave whose wait was cancelled (the caller's task was), at once:
    ///   nothing of it was sent again, so its deliveries end as not sent instead of keeping the answer the retry
    ///   would replace.
    static func send(
        _ retries: [(position: Int, delay: Duration)],
        resolution: Duration,
        cancelled: @escaping @Sendable (_ positions: [Int]) -> Void,
        _ send: @escaping @Sendable (_ positions: [Int]) async -> Void
    ) async {
        await withTaskGroup(of: Void.self) { group in
            for wave in waves(retries, resolution: resolution) {
                group.addTask {
                    if wave.delay > .zero {
                        do {
                            try await Task.sleep(for: wave.delay)
                        } catch {
                            return cancelled(wave.positions)
                        }
                    }
                    await send(wave.positions)
                }
            }
        }
    }
}
