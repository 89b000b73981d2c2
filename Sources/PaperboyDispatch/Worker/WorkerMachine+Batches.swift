import Foundation
import PaperboyCore

extension WorkerMachine {
    /// A batch was read: its send machine starts, told of what the worker knows already (a drain, a cancellation, a
    /// hold it raised and the store has not confirmed yet).
    mutating func start(_ id: Int64, _ contents: BatchContents, at moment: Moment, _ actions: inout [Action]) {
        guard let entry = held[id], case .reading = entry.phase else { return }
        if entry.lost {
            end(id, .lost, at: moment, &actions)
            return
        }
        health.saw(appID: entry.batch.appID, providers: contents.appProviders)
        for (provider, state) in contents.providers {
            // Held: the hold covers what this worker tallied; it starts again once the hold ends.
            if case .held = state { misconfigurations.reset(appID: entry.batch.appID, environment: entry.batch.environment, provider: provider) }
        }
        var providers = contents.providers
        for (key, suspicion) in raisedHolds where key.appID == entry.batch.appID && key.environment == entry.batch.environment {
            if case .ready = providers[key.provider] { providers[key.provider] = .held(suspicion.reason) }
        }
        let machine = BatchSendMachine(
            batch: entry.batch,
            targets: contents.targets,
            providers: providers,
            readyAlertProviders: contents.readyAlertProviders,
            trustedUntil: entry.trustedUntil,
            configuration: configuration.batch
        )
        held[id]?.phase = .sending(machine, wake: nil)
        held[id]?.configuration = contents.configuration
        held[id]?.confirmed = contents.confirmed
        forward(.started, to: id, at: moment, &actions)
        if entry.cancelled { forward(.broadcastCancelled, to: id, at: moment, &actions) }
        if let drainDeadline { forward(.drainStarted(deadline: drainDeadline), to: id, at: moment, &actions) }
    }

    mutating func unreadable(_ id: Int64, _ failure: ReadFailure, at moment: Moment, _ actions: inout [Action]) {
        guard let entry = held[id] else { return }
        switch failure {
        case .broadcast(let cause, let reason):
            actions.append(.failBroadcast(entry.batch, cause: cause, reason: reason))
            end(id, .failed, at: moment, &actions)
        case .database(let error):
            end(id, .unreadable(error), at: moment, &actions)
        }
    }

    /// Answers of a batch: tallied per provider for the misconfiguration guard, then given to the batch; a suspicion
    /// holds the provider for every batch of the app here.
    mutating func answered(_ id: Int64, _ answers: [BatchSendMachine.Answer], at moment: Moment, _ actions: inout [Action]) {
        guard let entry = held[id], case .sending(let machine, _) = entry.phase else { return }
        var byProvider: [PushProvider: [(reason: String, hint: String?)]] = [:]
        for answer in answers
        where answer.position < machine.targets.count && !answer.credentialsRejected && !answer.providerUnavailable && !answer.appMisconfigured {
            switch answer.result {
            case .accepted:
                byProvider[machine.targets[answer.position].provider, default: []].append(("accepted", nil))
            case .rejected(let reason, _):
                byProvider[machine.targets[answer.position].provider, default: []].append((reason, answer.misconfigurationHint))
            case .fateUnknown, .notSent, .skipped:
                break
            }
        }
        var suspicions: [MisconfigurationGuard.Suspicion] = []
        for provider in PushProvider.allCases {
            guard let tallied = byProvider[provider], !entry.confirmed.contains(provider),
                raisedHolds[HoldKey(appID: entry.batch.appID, environment: entry.batch.environment, provider: provider)] == nil
            else { continue }
            if let suspicion = misconfigurations.observe(
                appID: entry.batch.appID,
                environment: entry.batch.environment,
                provider: provider,
                tallied,
                now: moment.monotonic,
                version: entry.configuration
            ) {
                suspicions.append(suspicion)
            }
        }
        // The hold first: the answers that made it are then taken as the configuration's, not the tokens'.
        for suspicion in suspicions {
            raisedHolds[suspicion.key] = suspicion
            actions.append(.raiseHold(suspicion))
            for other in order {
                guard let batch = held[other]?.batch, batch.appID == suspicion.appID, batch.environment == suspicion.environment else { continue }
                forward(.misconfigured(suspicion.provider, suspicion.reason), to: other, at: moment, &actions)
            }
        }
        forward(.answered(answers), to: id, at: moment, &actions)
    }

    /// Gives `event` to the batch's send machine, if it is sending, and carries out what it decides.
    mutating func forward(_ event: BatchSendMachine.Event, to id: Int64, at moment: Moment, _ actions: inout [Action]) {
        guard let batch = held[id]?.batch, case .sending(var machine, _)? = held[id]?.phase else { return }
        // The stored copy goes first, so that the machine's buffers are not copied when it changes.
        held[id]?.phase = .reading
        let decision = machine.next(event, at: moment)
        held[id]?.phase = .sending(machine, wake: nil)
        for send in decision.sends { actions.append(.send(id, send)) }
        if decision.withdraw { actions.append(.withdraw(id)) }
        switch decision.action {
        case .wait(let until):
            held[id]?.phase = .sending(machine, wake: until == .distantFuture ? nil : until)
        case .claimSlot(let from, let remaining, let notBefore):
            actions.append(.claimSlot(batch, from: from, remaining: remaining, notBefore: notBefore))
        case .reloadCredentials(let provider):
            actions.append(.reloadCredentials(batch, provider, refusedGeneration: machine.generation(of: provider) ?? 0))
        case .confirmLease:
            held[id]?.confirmAskedAt = moment.monotonic
            actions.append(.confirmLease(batch))
        case .finish(.abandon):
            end(id, .lost, at: moment, &actions)
        case .finish(let completion):
            let patience = moment.monotonic + configuration.recordPatience
            held[id]?.phase = .writing(completion, failures: 0, retryAt: nil, giveUpAt: min(patience, stopAt ?? patience))
            actions.append(.write(batch, completion))
        }
    }
}
