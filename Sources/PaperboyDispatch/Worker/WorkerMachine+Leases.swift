import Foundation
import PaperboyCore

extension WorkerMachine {
    /// What is due at `moment`, after every event: batches whose instant came, writes to try again, the heartbeat,
    /// a lease, the end of a drain.
    mutating func due(at moment: Moment, _ actions: inout [Action]) {
        for id in order {
            guard let entry = held[id] else { continue }
            switch entry.phase {
            case .sending(_, let wake?) where wake <= moment.now:
                forward(.tick, to: id, at: moment, &actions)
            case .writing(let completion, let failures, let retryAt?, let giveUpAt) where retryAt <= moment.now:
                held[id]?.phase = .writing(completion, failures: failures, retryAt: nil, giveUpAt: giveUpAt)
                actions.append(.write(entry.batch, completion))
            default:
                break
            }
        }
        if let heartbeat = nextHeartbeat, heartbeat <= moment.now {
            nextHeartbeat = moment.now.addingTimeInterval(configuration.leaseDuration / 3)
            _ = health.expire(now: moment.monotonic)
            let batches = order.compactMap { held[$0] }.filter { !$0.lost }.map(\.batch)
            if renewing == nil && !batches.isEmpty {
                renewing = moment.monotonic
                renewingIDs = batches.map(\.id)
                actions.append(.renew(batches))
            }
            actions.append(.reportStatus)
            // A hold the store could not be asked for is asked again: until it is there, no operator can see or
            // release it, and this worker would give the app's batches back for ever.
            for key in holdsToRaiseAgain.sorted() {
                if let suspicion = raisedHolds[key] { actions.append(.raiseHold(suspicion)) }
            }
            holdsToRaiseAgain = []
        }
        if let stopAt, !stopped {
            if held.isEmpty && !leasing {
                stopped = true
                actions.append(.stop)
            } else if moment.monotonic >= stopAt || drainDeadline.map({ moment.now >= $0.addingTimeInterval(configuration.drainWriteGrace) }) == true
            {
                // Either clock: the wake for it is on the wall clock, which a measured offset may move.
                for id in order where held[id] != nil {
                    end(id, .unwritten("the drain's deadline passed before the batch was written"), at: moment, &actions)
                }
                stopped = true
                actions.append(.stop)
            }
            return
        }
        if !leasing && held.count < configuration.maxBatchesInFlight, let next = nextLeaseAt, next <= moment.now {
            leasing = true
            leaseAskedAt = moment.monotonic
            actions.append(
                .lease(
                    LeaseRequest(
                        excludingBatches: order,
                        excludingApps: health.excludedApps(now: moment.monotonic),
                        excludingProviders: health.excludedProviders(now: moment.monotonic),
                        takeOver: mayTakeOver(at: moment),
                        takeOverGrace: configuration.takeOverGrace
                    )
                )
            )
        }
    }

    /// A batch was leased: it is read, then sent.
    mutating func take(_ batch: LeasedBatch, at moment: Moment, _ actions: inout [Action]) {
        let trusted = (leaseAskedAt ?? moment.monotonic) + configuration.leaseDuration
        held[batch.id] = Held(batch: batch, phase: .reading, trustedUntil: trusted)
        order.append(batch.id)
        actions.append(.read(batch))
    }

    /// The heartbeat's renewal came back: the batches it found are trusted from when it was asked for; those it did
    /// not find lost their leases (unless being written: recorded meanwhile, or the write says so).
    mutating func renewed(_ renewal: LeaseRenewal, at moment: Moment, _ actions: inout [Action]) {
        let askedAt = renewing ?? moment.monotonic
        renewing = nil
        let ids = renewingIDs
        renewingIDs = []
        for id in ids {
            guard let entry = held[id], !entry.lost else { continue }
            if renewal.held.contains(id) {
                renewedLease(id, askedAt: askedAt, stopped: renewal.stopped.contains(id), at: moment, &actions)
            } else if case .writing = entry.phase {
                continue
            } else {
                leaseLost(id, at: moment, &actions)
            }
        }
    }

    /// One batch's confirmation came back.
    mutating func confirmed(_ id: Int64, _ renewal: LeaseRenewal, at moment: Moment, _ actions: inout [Action]) {
        guard let entry = held[id] else { return }
        let askedAt = entry.confirmAskedAt ?? moment.monotonic
        held[id]?.confirmAskedAt = nil
        if renewal.held.contains(id) {
            renewedLease(id, askedAt: askedAt, stopped: renewal.stopped.contains(id), at: moment, &actions)
        } else {
            leaseLost(id, at: moment, &actions)
        }
    }

    mutating func renewedLease(_ id: Int64, askedAt: TimeInterval, stopped: Bool, at moment: Moment, _ actions: inout [Action]) {
        let until = askedAt + configuration.leaseDuration
        let trusted = max(held[id]?.trustedUntil ?? until, until)
        held[id]?.trustedUntil = trusted
        forward(.leaseRenewed(trustedUntil: until), to: id, at: moment, &actions)
        if stopped && held[id]?.cancelled == false {
            held[id]?.cancelled = true
            forward(.broadcastCancelled, to: id, at: moment, &actions)
        }
    }

    mutating func leaseLost(_ id: Int64, at moment: Moment, _ actions: inout [Action]) {
        guard let entry = held[id] else { return }
        held[id]?.lost = true
        switch entry.phase {
        case .reading: break
        case .sending: forward(.leaseLost, to: id, at: moment, &actions)
        case .writing: end(id, .lost, at: moment, &actions)
        }
    }

    /// SIGTERM: every batch is told; nothing more is leased; the worker stops when no batch is left, or at the
    /// deadline and the write grace.
    mutating func drain(timeout: TimeInterval, at moment: Moment, _ actions: inout [Action]) {
        let deadline = moment.now.addingTimeInterval(timeout)
        let stop = moment.monotonic + timeout + configuration.drainWriteGrace
        if let drainDeadline, drainDeadline <= deadline { return }
        drainDeadline = deadline
        stopAt = min(stopAt ?? stop, stop)
        for id in order {
            guard let entry = held[id] else { continue }
            switch entry.phase {
            case .reading:
                break
            case .sending:
                forward(.drainStarted(deadline: deadline), to: id, at: moment, &actions)
            case .writing(let completion, let failures, let retryAt, let giveUpAt):
                held[id]?.phase = .writing(completion, failures: failures, retryAt: retryAt, giveUpAt: min(giveUpAt, stopAt!))
            }
        }
        actions.append(.reportStatus)
    }
}
