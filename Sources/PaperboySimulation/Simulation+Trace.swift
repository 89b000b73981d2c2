import Foundation
import PaperboyCore
import PaperboyDispatch

/// The trace's words for events and actions: short, with the batch, lease, positions and reasons that let a failing
/// seed name its cause.
extension Simulation {
    static func describe(_ event: WorkerMachine.Event) -> String {
        switch event {
        case .started: "started"
        case .tick: "tick"
        case .leased(let batch?): "leased batch \(batch.id) (lease \(batch.leases), \(batch.devices) devices, slot \(time(batch.slotStart)))"
        case .leased(nil): "leased nothing"
        case .leaseFailed(let error): "lease failed: \(error)"
        case .batchRead(let id, let contents):
            "read batch \(id): \(contents.targets.count) targets, \(contents.providers.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key.rawValue) \($0.value)" }.joined(separator: ", "))"
        case .batchUnreadable(let id, let failure): "batch \(id) unreadable: \(failure)"
        case .answered(let id, let answers): "batch \(id) answered \(summary(answers))"
        case .reachability(let id, let provider, let unreachable, _): "batch \(id): \(provider.rawValue) \(unreachable ? "unreachable" : "reachable")"
        case .slotClaimed(let id, let start): "batch \(id) slot at \(time(start))"
        case .slotClaimFailed(let id, let error): "batch \(id) slot claim failed: \(error)"
        case .leaseLost(let id): "batch \(id) lease lost"
        case .renewed(let renewal): "renewed \(renewal.held.sorted()), stopped \(renewal.stopped.sorted())"
        case .renewFailed(let error): "renewal failed: \(error)"
        case .leaseConfirmed(let id, let renewal): "batch \(id) lease confirmed: \(renewal.held.contains(id))"
        case .leaseConfirmFailed(let id, let error): "batch \(id) confirmation failed: \(error)"
        case .credentialsReloaded(let id, let provider, let reload): "batch \(id) \(provider.rawValue) credentials read again: \(reload)"
        case .written(let id): "batch \(id) written"
        case .writeFailed(let id, let error): "batch \(id) write failed: \(error)"
        case .holdRaised(let key): "hold raised for app \(key.appID) \(key.environment) \(key.provider.rawValue)"
        case .holdNotRaised(let key, let error): "hold for app \(key.appID) \(key.provider.rawValue) not raised: \(error)"
        case .drainStarted(let timeout): "drain (\(Int(timeout)) s)"
        }
    }

    static func describe(_ action: WorkerMachine.Action) -> String {
        switch action {
        case .lease: "lease"
        case .read(let batch): "read \(batch.id)"
        case .send(let id, let send): "send \(id) \(send.provider.rawValue) \(send.pushes.map(\.position)) gen \(send.generation)"
        case .withdraw(let id): "withdraw \(id)"
        case .claimSlot(let batch, let from, let remaining, _): "claim a slot for \(batch.id) from \(from) (\(remaining))"
        case .renew(let batches): "renew \(batches.map(\.id))"
        case .confirmLease(let batch): "confirm \(batch.id)"
        case .reloadCredentials(let batch, let provider, let generation): "reload \(provider.rawValue) for \(batch.id) (refused gen \(generation))"
        case .write(let batch, .record(let outcomes)): "record \(batch.id) (\(outcomes.count))"
        case .write(let batch, .giveBack(let recorded, let returned, let because)):
            "give back \(batch.id) (\(recorded.count) recorded, \(returned.count) returned: \(because.description))"
        case .write(let batch, .abandon): "abandon \(batch.id)"
        case .failBroadcast(let batch, _, let reason): "fail \(batch.broadcastID): \(reason)"
        case .reportProblem(let problem): "problem app \(problem.appID) \(problem.provider.rawValue): \(problem.reason)"
        case .reportSent(let key, _): "sent app \(key.appID) \(key.provider.rawValue)"
        case .raiseHold(let suspicion): "hold app \(suspicion.appID) \(suspicion.provider.rawValue): \(suspicion.reason)"
        case .reportStatus: "status"
        case .ended(let batch, let end): "ended \(batch.id): \(end.name)"
        case .stop: "stop"
        }
    }

    static func summary(_ answers: [BatchSendMachine.Answer]) -> String {
        var counts: [String: [Int]] = [:]
        for answer in answers {
            let name: String =
                switch answer.result {
                case .accepted: "accepted"
                case .rejected(let reason, _): answer.credentialsRejected ? "refused" : reason
                case .fateUnknown: "fateUnknown"
                case .notSent: answer.credentialsRejected ? "refused" : "notSent"
                case .skipped(let why): "skipped \(why.rawValue)"
                }
            counts[name, default: []].append(answer.position)
        }
        return counts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value.sorted())" }.joined(separator: ", ")
    }

    static func time(_ date: Date) -> String {
        String(format: "%.3f", date.timeIntervalSince1970 - 1_800_000_000)
    }
}

extension WorkerMachine.BatchEnd {
    var name: String {
        switch self {
        case .recorded(let outcomes): "recorded \(outcomes.count)"
        case .givenBack(let recorded, let returned, _): "given back (\(recorded.count) recorded, \(returned) returned)"
        case .lost: "lost"
        case .unreadable(let error): "unreadable: \(error)"
        case .failed: "failed"
        case .unwritten(let error): "unwritten: \(error)"
        }
    }
}
