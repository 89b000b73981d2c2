import Foundation
import PaperboyCore
import PaperboyDispatch

/// The invariants of visible alerts: the alert wave's and the ready alert.
extension Invariants {
    /// A visible alert goes only to a reader who allowed alerts and asked for one: the alert wave's to those asking for
    /// edition alerts or to be told when the edition is ready, the ready alert (in place of a background follow-up,
    /// through APNs) only to the latter, never in wave 1. And in a broadcast's last background wave, every APNs reader who
    /// asked to be told and was not told yet (no alert of the edition in the ledger before) gets the ready alert, not
    /// another background push.
    func alertsOnlyAsked() -> [String] {
        var violations: [String] = []
        for push in simulation.provider.log {
            guard let device = model.devices[push.device], let broadcast = model.broadcasts[push.broadcast] else { continue }
            let kind = model.waves[DispatchModel.WaveKey(broadcast: push.broadcast, wave: push.wave)]?.kind ?? .background
            let at = String(format: "%.1f", push.writtenAt.timeIntervalSince(simulation.start))
            if push.alert {
                simulation.covered.insert(kind == .alert ? "alertWave" : "readyAlert")
                if !device.alertsAuthorized {
                    violations.append(
                        "device \(push.device) got an alert in wave \(push.wave) of \(push.broadcast) at \(at)s: it does not allow alerts"
                    )
                } else if kind == .alert && !(device.editionAlerts || device.notifyWhenReady) {
                    violations.append(
                        "device \(push.device) got the alert wave's alert in \(push.broadcast) at \(at)s: it asked for no edition alert"
                    )
                } else if kind == .background && (!device.notifyWhenReady || push.wave < 2 || device.token.provider != .apns) {
                    violations.append(
                        "device \(push.device) got the ready alert in wave \(push.wave) of \(push.broadcast) at \(at)s: "
                            + "it did not ask to be told, or the wave or provider carries none"
                    )
                }
            } else if kind == .alert {
                violations.append("device \(push.device) got a background push in the alert wave \(push.wave) of \(push.broadcast) at \(at)s")
            } else if kind == .background && device.notifyWhenReady && device.alertsAuthorized && device.token.provider == .apns,
                push.wave >= 2, !broadcast.options.maxPushesPerDevice.allowsWave(after: push.wave),
                !model.editionDeliveries(of: push.device, edition: broadcast.edition).contains(where: { !$0.background && $0.sentAt < push.writtenAt }
                )
            {
                violations.append(
                    "device \(push.device) asked to be told when the edition is ready and got a background push, not the ready alert, "
                        + "in the last background wave \(push.wave) of \(push.broadcast) at \(at)s"
                )
            }
            if violations.count >= 5 { break }
        }
        return violations
    }

    /// A reader gets at most one visible alert per edition (the ready alert or the alert wave's), except a dead worker's
    /// bounded in-flight work, as for ``pushedOncePerWave()``.
    func oneAlertPerEdition() -> [String] {
        struct Reader: Hashable {
            var device: Int64
            var edition: UUID
        }
        var violations: [String] = []
        var seen: [Reader: SimulatedProvider.Push] = [:]
        let abandoned = abandonedBatches
        for push in simulation.provider.log.sorted(by: { $0.writtenAt < $1.writtenAt }) where push.alert && push.delivered {
            guard let edition = model.broadcasts[push.broadcast]?.edition else { continue }
            let reader = Reader(device: push.device, edition: edition)
            guard let first = seen[reader] else {
                seen[reader] = push
                continue
            }
            if abandoned[first.worker]?.contains(first.batch) == true { continue }
            violations.append(
                "device \(push.device) got two alerts for one edition: wave \(first.wave) of \(first.broadcast) by \(first.worker) (batch \(first.batch)) "
                    + "and wave \(push.wave) of \(push.broadcast) by \(push.worker) (batch \(push.batch))"
            )
            if violations.count >= 5 { break }
        }
        return violations
    }
}
