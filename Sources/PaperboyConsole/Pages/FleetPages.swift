import Foundation
import Hummingbird
import Logging
import PaperboyCore
import PaperboyDispatch
import PaperboyStore

/// A device by its token; the apps with their providers and who can send for them; the workers.
extension ConsoleRoutes {
    struct DevicePage: Sendable {
        struct Push: Sendable {
            var sent: String
            var href: String
            var edition: String
            var wave: Int
            var kind: String
            var outcome: String
        }

        struct ReceiptRow: Sendable {
            var received: String
            var edition: String
            var result: String
            var context: String
        }

        struct Has: Sendable {
            var pushes: Bool
            var receipts: Bool
        }

        struct Found: Sendable {
            var provider: String
            var bundleID: String
            var appID: Int
            var state: String
            var stateClass: String
            var stateNote: String
            var dormancy: String
            var tokenText: String
            var platform: String
            var environment: String
            var subscriptions: String
            var tier: String
            var autoDownload: String
            var alerts: String
            var model: String
            var timeZone: String
            var registered: String
            var updated: String
            var pushes: [Push]
            var receipts: [ReceiptRow]
            var has: Has
        }

        var frame: Frame
        var token: String
        var days: Int
        var error: String?
        var notFound: Bool
        var devices: [Found]
    }

    /// `GET /console/devices`: the look-up form. A token in the URL is not looked up (nor shown): URLs end up in
    /// proxy logs and browser history, so a look-up is a form posted with the CSRF token.
    @Sendable func devicePage(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        _ = try session(context)
        let page = DevicePage(frame: frame(context, current: "/console/devices"), token: "", days: 3, error: nil, notFound: false, devices: [])
        return ConsolePage.render("device", page)
    }

    struct DeviceForm: Decodable {
        var csrf: String?
        var token: String?
        var days: String?
    }

    /// `POST /console/devices`: a device by its token (a viewer may look one up).
    @Sendable func deviceLookup(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let form = try await form(DeviceForm.self, request)
        _ = try formSession(request, context: context, form: form.csrf, doing: "look a device up", operatorOnly: false)
        let token = (form.token ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        var page = DevicePage(frame: frame(context, current: "/console/devices"), token: token, days: 3, error: nil, notFound: false, devices: [])
        if let daysText = form.days, !daysText.isEmpty {
            guard let days = Int(daysText), (1...30).contains(days) else {
                page.error = "days: a whole number from 1 to 30, not \(daysText)"
                return ConsolePage.render("device", page, status: .badRequest)
            }
            page.days = days
        }
        guard !token.isEmpty else { return ConsolePage.render("device", page) }
        let candidates: [PushToken]
        do {
            candidates = try PushToken.candidates(token)
        } catch {
            page.error = "token: \(error)"
            return ConsolePage.render("device", page, status: .badRequest)
        }
        let now = self.now
        let since = now.addingTimeInterval(-Double(page.days) * 86_400)
        let records = try await console.devices(candidates: candidates, logger: context.logger)
        page.notFound = records.isEmpty
        for record in records {
            let pushes = try await console.pushes(deviceID: record.id, since: since, logger: context.logger)
            let receipts = try await console.receipts(deviceID: record.id, since: since, logger: context.logger)
            page.devices.append(found(record, pushes: pushes, receipts: receipts, now: now))
        }
        return ConsolePage.render("device", page, status: records.isEmpty ? .notFound : .ok)
    }

    func found(_ record: DeviceRecord, pushes: [DevicePush], receipts: [DeviceReceipt], now: Date) -> DevicePage.Found {
        let device = record.device
        let registration = device.registration
        let stateNote: String
        if device.active {
            stateNote = ""
        } else if let unregistered = device.unregisteredAt {
            stateNote =
                "the provider declared its token invalid at \(TimeText.dateTime(unregistered, timeZone: timeZone)); a newer registration revives it"
        } else if let deleted = device.deletedAt {
            stateNote = "deleted by the app at \(TimeText.dateTime(deleted, timeZone: timeZone))"
        } else {
            stateNote = ""
        }
        let dormancy: String =
            if record.dormant {
                "dormant: got wave 1's push and no follow-ups (\(record.editionsUnanswered ?? 0) editions in a row unanswered); a receipt or a new registration revives it"
            } else if let unanswered = record.editionsUnanswered {
                unanswered == 0 ? "answering" : "\(unanswered) edition\(unanswered == 1 ? "" : "s") in a row unanswered, not dormant"
            } else {
                "not counted yet (no wave-1 push recorded)"
            }
        let details = [registration.model, registration.osVersion.map { "OS \($0)" }, registration.appVersion.map { "app \($0)" }].compactMap { $0 }
        return DevicePage.Found(
            provider: registration.provider == .apns ? "APNs" : "FCM",
            bundleID: record.bundleID,
            appID: record.appID,
            state: device.active ? "active" : "inactive",
            stateClass: device.active ? "completed" : "failed",
            stateNote: stateNote,
            dormancy: dormancy,
            tokenText: device.token,
            platform: registration.platform.rawValue,
            environment: registration.environment.rawValue,
            subscriptions: registration.subscriptions.isEmpty ? "none" : registration.subscriptions.joined(separator: ", "),
            tier: registration.tier.rawValue,
            autoDownload: registration.autoDownload ? "auto-download on" : "auto-download off",
            alerts: (registration.alertsAuthorized ? "allowed" : "not allowed")
                + (registration.notifyWhenReady ? ", wants the ready alert" : registration.editionAlerts ? ", wants edition alerts" : ""),
            model: details.isEmpty ? "-" : details.joined(separator: ", "),
            timeZone: registration.timeZone + (registration.locale.map { ", \($0)" } ?? ""),
            registered: TimeText.dateTime(device.registeredAt, timeZone: timeZone),
            updated: TimeText.dateTime(device.updatedAt, timeZone: timeZone) + " (" + TimeText.relative(device.updatedAt, now: now) + ")",
            pushes: pushes.map { push in
                DevicePage.Push(
                    sent: TimeText.dateTime(push.sentAt, timeZone: timeZone),
                    href: "/console/broadcasts/\(push.broadcastID.uuidString.lowercased())",
                    edition: "\(push.publication) \(push.issueDate)",
                    wave: push.wave,
                    kind: push.background ? "background" : "alert",
                    outcome: push.outcome + (push.reason.map { " \($0)" } ?? "")
                )
            },
            receipts: receipts.map { receipt in
                let context = receipt.receipt.context
                let parts: [String?] = [
                    context.network.map { "network \($0.rawValue)" },
                    context.charging.map { $0 ? "charging" : "on battery" },
                    context.lowPowerMode.map { $0 ? "Low Power Mode" : nil } ?? nil,
                    context.backgroundRefresh.map { $0 ? nil : "Background App Refresh off" } ?? nil,
                    context.wave.map { "wave \($0)" },
                    context.secondsFromPush.map { "\($0)s after the push" },
                ]
                return DevicePage.ReceiptRow(
                    received: TimeText.dateTime(receipt.receipt.receivedAt, timeZone: timeZone),
                    edition: "\(receipt.publication) \(receipt.issueDate)",
                    result: receipt.receipt.result.rawValue,
                    context: parts.compactMap { $0 }.joined(separator: ", ")
                )
            },
            has: .init(pushes: !pushes.isEmpty, receipts: !receipts.isEmpty)
        )
    }

    // MARK: - Apps

    struct AppsPage: Sendable {
        struct Sender: Sendable {
            var worker: String
            var provider: String
            var status: String
            var `class`: String
            var lastSent: String
        }

        struct AppRow: Sendable {
            struct Has: Sendable {
                var senders: Bool
            }

            var id: Int
            var bundleID: String
            var apns: String
            var fcm: String
            var publications: String
            var senders: [Sender]
            var has: Has
        }

        struct Has: Sendable {
            var apps: Bool
            var schedules: Bool
        }

        var frame: Frame
        var apps: [AppRow]
        var schedules: [ListPage.ScheduleRow]
        var has: Has
    }

    @Sendable func appsPage(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        _ = try session(context)
        let now = self.now
        let apps = try await AppRepository(client: client).list(logger: context.logger)
        let publications = try await PublicationRepository(client: client).list(logger: context.logger)
        let statuses = try await console.senderStatuses(logger: context.logger)
        let live = Set(try await WorkerRepository(client: client).list(seenSince: now.addingTimeInterval(-60), logger: context.logger).map(\.name))
        let rows = apps.map { app in
            let senders = statuses.filter { $0.appID == app.id && live.contains($0.worker) }
            return AppsPage.AppRow(
                id: app.id,
                bundleID: app.bundleID,
                apns: app.apns.map { "team \($0.teamID), key \($0.keyID)" } ?? "not configured",
                fcm: app.fcm.map { "project \($0.projectID)" } ?? "not configured",
                publications: publications.filter { $0.appID == app.id }
                    .map { publication in publication.slug + (publication.origin.map { " (origin \($0))" } ?? "") }
                    .joined(separator: ", "),
                senders: senders.map { status in
                    AppsPage.Sender(
                        worker: status.worker,
                        provider: status.provider == .apns ? "APNs" : "FCM",
                        status: status.problem.map { problem in
                            "no: \(problem)" + (status.problemSince.map { " (since \(TimeText.relative($0, now: now)))" } ?? "")
                        } ?? "yes",
                        class: status.problem == nil ? "good" : "bad",
                        lastSent: status.lastSentAt.map { TimeText.relative($0, now: now) } ?? "-"
                    )
                },
                has: .init(senders: !senders.isEmpty)
            )
        }
        let schedules = try await scheduleRows(now: now, logger: context.logger)
        let page = AppsPage(
            frame: frame(context, current: "/console/apps"),
            apps: rows,
            schedules: schedules,
            has: .init(apps: !rows.isEmpty, schedules: !schedules.isEmpty)
        )
        return ConsolePage.render("apps", page)
    }

    // MARK: - Workers

    struct WorkersPage: Sendable {
        struct Batch: Sendable {
            var href: String
            var broadcast: String
            var wave: Int
            var cohort: Int
            var devices: String
            var lease: String
            var note: String
        }

        struct Worker: Sendable {
            struct Has: Sendable {
                var batches: Bool
            }

            var name: String
            var draining: Bool
            var started: String
            var seen: String
            var batchCount: Int
            var problems: String
            var problemClass: String
            var lastError: String
            var batches: [Batch]
            var has: Has
        }

        struct Has: Sendable {
            var workers: Bool
        }

        var frame: Frame
        var workers: [Worker]
        var has: Has
    }

    @Sendable func workersPage(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        _ = try session(context)
        let now = self.now
        let workers = try await WorkerRepository(client: client).list(seenSince: now.addingTimeInterval(-60), logger: context.logger)
        let batches = try await console.openBatches(logger: context.logger)
        let rows = workers.map { worker in
            let held = batches.filter { $0.worker == worker.name }
            let cannotSend = worker.cannotSend
            return WorkersPage.Worker(
                name: worker.name,
                draining: worker.draining,
                started: TimeText.dateTime(worker.startedAt, timeZone: timeZone) + " (" + TimeText.relative(worker.startedAt, now: now) + ")",
                seen: TimeText.relative(worker.seenAt, now: now),
                batchCount: worker.batches,
                problems: cannotSend.isEmpty ? "nothing: it can send for every app" : cannotSend.joined(separator: "; "),
                problemClass: cannotSend.isEmpty ? "good" : "bad",
                lastError: worker.lastError.map { error in error + (worker.lastErrorAt.map { " (\(TimeText.relative($0, now: now)))" } ?? "") }
                    ?? "none",
                batches: held.map { batch in
                    WorkersPage.Batch(
                        href: "/console/broadcasts/\(batch.broadcastID.uuidString.lowercased())",
                        broadcast: String(batch.broadcastID.uuidString.lowercased().prefix(8)),
                        wave: batch.wave,
                        cohort: batch.cohort,
                        devices: Numbers.grouped(batch.devices),
                        lease: TimeText.clock(batch.leaseExpiresAt, timeZone: timeZone),
                        note: [batch.leases > 1 ? "leased \(batch.leases) times" : nil, batch.givenBackFor.map { "given back: \($0)" }]
                            .compactMap { $0 }.joined(separator: "; ")
                    )
                },
                has: .init(batches: !held.isEmpty)
            )
        }
        let page = WorkersPage(frame: frame(context, current: "/console/workers"), workers: rows, has: .init(workers: !rows.isEmpty))
        return ConsolePage.render("workers", page)
    }
}
