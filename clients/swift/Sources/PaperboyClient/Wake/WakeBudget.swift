import Foundation

/// The time one wake-up may spend, in all, and what each of its steps may still spend: iOS gives a background push
/// about 30 seconds before the completion handler must be called, and a Notification Service Extension the seconds of
/// its alert's `extension`. `URLRequest.timeoutInterval` cannot bound that: it is an idle timeout, so a download that
/// trickles a byte now and then runs for minutes. The budget is a deadline from the wake's start; every step runs
/// under ``spend(_:timer:_:)``, which cancels it at its allowance; the receipt's share is kept back from the downloads.
///
/// The rules, pure (every instant given):
/// 1. The deadline is `start + seconds` (25 of iOS's ~30 by default: iOS's own count starts before the app's code
///    runs), or the edition's deadline when that comes first.
/// 2. The manifest may spend at most ``manifestSeconds``; a download whatever is left but ``receiptSeconds``; the
///    receipt whatever is left.
/// 3. A step is not started when what it may spend is too little to be worth it (a download under
///    ``shortestDownload``, a manifest or a receipt under a second): it is skipped, never started to be cut.
public struct WakeBudget: Sendable, Equatable {
    /// A step of a wake-up.
    public enum Step: Sendable, Equatable {
        /// The edition's manifest.
        case manifest
        /// A bundle in the foreground.
        case download
        /// The edition's receipt, before the wake answers.
        case receipt
    }

    /// The wake's part of iOS's ~30 seconds.
    public static let backgroundPushSeconds: TimeInterval = 25
    public static let manifestSeconds: TimeInterval = 8
    public static let receiptSeconds: TimeInterval = 5
    public static let shortestDownload: TimeInterval = 3
    /// What an extension keeps back from its alert's `seconds`: iOS calls `serviceExtensionTimeWillExpire` shortly
    /// before they are over, and the alert must be delivered by then.
    public static let extensionMargin: TimeInterval = 3

    /// When the wake started (the push arrived).
    public var start: Date
    /// When everything, the receipt included, is over.
    public var deadline: Date

    /// - Parameters:
    ///   - start: when the wake started.
    ///   - seconds: its time in all.
    ///   - editionDeadline: the edition's deadline, after which nothing is worth doing.
    public init(start: Date, seconds: TimeInterval = WakeBudget.backgroundPushSeconds, editionDeadline: Date? = nil) {
        self.start = start
        let own = start.addingTimeInterval(seconds)
        deadline = editionDeadline.map { min($0, own) } ?? own
    }

    /// The budget of a Notification Service Extension's fetch for an alert with these limits.
    public static func forExtension(_ limits: EditionWakeUp.ExtensionLimits, start: Date, editionDeadline: Date?) -> WakeBudget {
        WakeBudget(start: start, seconds: max(0, TimeInterval(limits.seconds) - extensionMargin), editionDeadline: editionDeadline)
    }

    /// The seconds left at `now`, never negative.
    public func remaining(at now: Date) -> TimeInterval {
        max(0, deadline.timeIntervalSince(now))
    }

    /// What `step` may still spend at `now`; nil when it is not worth starting.
    public func allowance(for step: Step, at now: Date) -> TimeInterval? {
        let left = remaining(at: now)
        switch step {
        case .manifest:
            let allowed = min(Self.manifestSeconds, left - Self.receiptSeconds)
            return allowed >= 1 ? allowed : nil
        case .download:
            let allowed = left - Self.receiptSeconds
            return allowed >= Self.shortestDownload ? allowed : nil
        case .receipt:
            return left >= 1 ? left : nil
        }
    }

    /// The step that did not fit: skipped (too little time left) or cut at its allowance.
    public struct Exhausted: Error, Sendable, Equatable, CustomStringConvertible {
        public var step: Step

        public var description: String { "the wake's time ran out for its \(step)" }
    }

    /// Runs `operation` as `step`, cancelled at the step's allowance.
    ///
    /// Returns at the allowance even when the operation does not end when cancelled (a request that ignores
    /// cancellation): the wake must answer the system in time, whatever the operation does after.
    /// - Throws: ``Exhausted`` when the step was skipped or cut; else what the operation throws.
    public func spend<Value: Sendable>(
        _ step: Step,
        timer: any WakeTimer,
        _ operation: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        guard let seconds = allowance(for: step, at: timer.now) else { throw Exhausted(step: step) }
        return try await TimeLimit.run(seconds: seconds, timer: timer, onTimeout: Exhausted(step: step), operation)
    }
}

/// An operation raced against a timer: whichever ends first answers, the other is cancelled.
enum TimeLimit {
    static func run<Value: Sendable>(
        seconds: TimeInterval,
        timer: any WakeTimer,
        onTimeout: any Error,
        _ operation: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        let race = Race<Value>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                race.begin(continuation)
                race.add(
                    Task {
                        let result: Result<Value, any Error>
                        do { result = .success(try await operation()) } catch { result = .failure(error) }
                        race.finish(result)
                    }
                )
                race.add(
                    Task {
                        guard (try? await timer.sleep(seconds: seconds)) != nil else { return }
                        race.finish(.failure(onTimeout))
                    }
                )
            }
        } onCancel: {
            race.finish(.failure(CancellationError()))
        }
    }

    /// The first result resumes the caller and cancels every task of the race.
    private final class Race<Value: Sendable>: @unchecked Sendable {
        private struct State {
            var continuation: CheckedContinuation<Value, any Error>?
            var result: Result<Value, any Error>?
            var tasks: [Task<Void, Never>] = []
        }

        private let state = Locked(State())

        func begin(_ continuation: CheckedContinuation<Value, any Error>) {
            let early = state.withValue { state -> Result<Value, any Error>? in
                if state.result == nil { state.continuation = continuation }
                return state.result
            }
            if let early { continuation.resume(with: early) }
        }

        func add(_ task: Task<Void, Never>) {
            let over = state.withValue { state -> Bool in
                state.tasks.append(task)
                return state.result != nil
            }
            if over { task.cancel() }
        }

        func finish(_ result: Result<Value, any Error>) {
            let (continuation, tasks) = state.withValue { state -> (CheckedContinuation<Value, any Error>?, [Task<Void, Never>]) in
                guard state.result == nil else { return (nil, []) }
                state.result = result
                defer { state.continuation = nil }
                return (state.continuation, state.tasks)
            }
            continuation?.resume(with: result)
            for task in tasks { task.cancel() }
        }
    }
}
