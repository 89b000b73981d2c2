import Foundation
import PaperboyCore

extension WorkerMachine {
    /// A batch's outcomes (or its give-back) are written: it ends.
    mutating func written(_ id: Int64, at moment: Moment, _ actions: inout [Action]) {
        guard let entry = held[id], case .writing(let completion, _, _, _) = entry.phase else { return }
        switch completion {
        case .record(let outcomes):
            end(id, .recorded(outcomes), at: moment, &actions)
        case .giveBack(let recorded, let returned, let because):
            end(id, .givenBack(recorded: recorded, returned: returned.count, because: because), at: moment, &actions)
        case .abandon:
            end(id, .lost, at: moment, &actions)
        }
    }

    /// Writing failed: tried again after a backoff, until the patience (or a drain's deadline) runs out; then the
    /// batch is left to its lease.
    mutating func writeFailed(_ id: Int64, _ error: String, at moment: Moment, _ actions: inout [Action]) {
        guard let entry = held[id], case .writing(let completion, let failures, _, let giveUpAt) = entry.phase else { return }
        if moment.monotonic >= giveUpAt {
            end(id, .unwritten(error), at: moment, &actions)
            return
        }
        let retryAt = moment.now.addingTimeInterval(configuration.retry.delay(after: failures + 1))
        held[id]?.phase = .writing(completion, failures: failures + 1, retryAt: retryAt, giveUpAt: giveUpAt)
    }

    /// The batch leaves the worker: what it tells about the app's providers goes into the health (a give-back for
    /// credentials starts a backoff; pushes recorded end one), and the next lease is asked for at once.
    mutating func end(_ id: Int64, _ end: BatchEnd, at moment: Moment, _ actions: inout [Action]) {
        guard let entry = held.removeValue(forKey: id) else { return }
        order.removeAll { $0 == id }
        actions.append(.ended(entry.batch, end))
        nextLeaseAt = moment.now
        let app = entry.batch.appID
        var sentThrough: Set<PushProvider> = []
        switch end {
        case .recorded(let outcomes):
            sentThrough = Self.providers(sentIn: outcomes)
        case .givenBack(let recorded, _, let because):
            sentThrough = Self.providers(sentIn: recorded)
            for provider in PushProvider.allCases {
                guard let why = because.providers[provider] else { continue }
                if case .held = why { continue }
                let (problem, news) = health.failed(appID: app, provider: provider, code: why.code, reason: why.reason, now: moment.monotonic)
                if news { actions.append(.reportProblem(problem)) }
            }
        case .lost, .unreadable, .failed, .unwritten:
            break
        }
        for provider in PushProvider.allCases where sentThrough.contains(provider) {
            let recovered = health.sent(appID: app, provider: provider) != nil
            if health.shouldReportSent(appID: app, provider: provider, now: moment.monotonic, interval: configuration.reportSentInterval) || recovered
            {
                actions.append(.reportSent(AppProvider(appID: app, provider: provider), recovered: recovered))
            }
        }
    }

    /// The providers through which `outcomes` went out (accepted, rejected, or written with no answer).
    static func providers(sentIn outcomes: [BatchOutcome]) -> Set<PushProvider> {
        Set(
            outcomes.compactMap { outcome -> PushProvider? in
                switch outcome.result {
                case .accepted, .rejected, .fateUnknown: outcome.provider
                case .notSent, .skipped: nil
                }
            }
        )
    }
}
