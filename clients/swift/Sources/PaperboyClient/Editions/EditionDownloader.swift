import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a wake-up tells the system: on iOS `UIBackgroundFetchResult`'s three cases (Platform/).
public enum WakeResult: Sendable, Equatable {
    case newData, noData, failed
}

/// Gets an edition onto the device inside the system's rules: the manifest and the first bundle in the time a
/// background push gives, the rest in background transfers of their own that end at the deadline, never a second
/// download of an edition while one runs, every file's length and SHA-256 checked, and the receipt handed to the
/// ``ReceiptCourier`` and sent *before* the wake-up answers (iOS may suspend the app as soon as it does).
///
/// Portable: the I/O is given (``HTTPTransport`` through the API client, ``BackgroundTransfers``, ``WakeTimer``,
/// the device's context), so every decision here runs in tests on Linux; on iOS, Platform/ gives URLSession's
/// background sessions, CryptoKit and UIKit's context, and answers `UIBackgroundFetchResult`.
public final class EditionDownloader: Sendable {
    public let store: EditionStore
    let api: PaperboyAPIClient
    let courier: ReceiptCourier
    let transfers: any BackgroundTransfers
    let timer: any WakeTimer
    let context: @Sendable (_ backgroundRefresh: Bool?) async -> DeviceContext

    /// - Parameters:
    ///   - store: where editions go.
    ///   - api: the API client, for the manifest (its transport also downloads the first bundle).
    ///   - courier: the receipts' outbox.
    ///   - transfers: the background sessions.
    ///   - timer: the time (the system's in use).
    ///   - context: what the device is doing, for the receipt (`DeviceContext.current(backgroundRefresh:)` on iOS).
    public init(
        store: EditionStore,
        api: PaperboyAPIClient,
        courier: ReceiptCourier,
        transfers: any BackgroundTransfers,
        timer: any WakeTimer = SystemWakeTimer(),
        context: @escaping @Sendable (_ backgroundRefresh: Bool?) async -> DeviceContext
    ) {
        self.store = store
        self.api = api
        self.courier = courier
        self.transfers = transfers
        self.timer = timer
        self.context = context
    }

    /// Whether the edition is on the device, every bundle checked.
    public func has(editionID: String) -> Bool { store.has(editionID: editionID) }

    /// The push handler's work. Answers what to tell the system, after the receipt (if any) has been sent or kept,
    /// within a ``WakeBudget`` of `seconds` from `arrival`: every step is cut at its share, and only this edition's
    /// receipt is sent before the answer.
    /// - Parameters:
    ///   - arrival: when the push arrived (the handler's first line).
    ///   - seconds: the wake's time in all, of iOS's ~30.
    public func wake(
        _ wakeUp: EditionWakeUp,
        arrival: Date,
        backgroundRefresh: Bool?,
        seconds: TimeInterval = WakeBudget.backgroundPushSeconds
    ) async -> WakeResult {
        let started = timer.now
        guard !wakeUp.isExpired(at: started) else { return .noData }  // too late: nothing, and no receipt
        let budget = WakeBudget(start: min(arrival, started), seconds: seconds, editionDeadline: wakeUp.deadline)
        let context = await context(backgroundRefresh)
        if store.has(editionID: wakeUp.editionID) {
            await deliver(ReceiptReport(for: wakeUp, arrival: arrival, now: timer.now, result: .noData, context: context), budget)
            return .noData
        }
        // An earlier wave's download goes on, and posts the receipt.
        if await transfers.hasTransfers(editionID: wakeUp.editionID) { return .noData }
        let api = self.api
        let plan: DownloadPlan
        do {
            let manifest = try await budget.spend(.manifest, timer: timer) { try await api.manifest(path: wakeUp.manifestPath) }
            guard let found = manifest.plan(for: wakeUp.tier) else { throw PaperboyAPIError(status: nil, message: "the edition has no bundles") }
            plan = found
        } catch {
            await deliver(ReceiptReport(for: wakeUp, arrival: arrival, now: timer.now, result: .failed, context: context), budget)
            return .failed
        }
        var first = 0
        var bytesDone: Int64 = 0
        // The first bundle in the push's own time: a background session started now runs when iOS likes.
        if let bundle = plan.bundles.first, let file = try? await download(bundle, budget: budget),
            store.place(file, bundle: bundle, index: 0, editionID: wakeUp.editionID)
        {
            first = 1
            bytesDone = bundle.bytes
        }
        if first == plan.bundles.count {
            store.markComplete(wakeUp.editionID)
            let seconds = timer.now.timeIntervalSince(started)
            await deliver(
                ReceiptReport(for: wakeUp, arrival: arrival, now: timer.now, result: .newData, bytes: bytesDone, seconds: seconds, context: context),
                budget
            )
            return .newData
        }
        // The rest in the edition's background session, which ends at the deadline.
        let rest = (first..<plan.bundles.count).map { index in
            let bundle = plan.bundles[index]
            return BackgroundTransfer(
                url: bundle.url,
                note: TransferNote(
                    editionID: wakeUp.editionID,
                    index: index,
                    count: plan.bundles.count,
                    bytes: bundle.bytes,
                    sha256: bundle.sha256,
                    wave: wakeUp.wave,
                    sentAt: wakeUp.sentAt,
                    arrival: arrival,
                    startedAt: started,
                    bytesBefore: bytesDone
                )
            )
        }
        transfers.start(rest, editionID: wakeUp.editionID, deadline: wakeUp.deadline)
        return .newData
    }

    /// The extension's work for an alert that carries `extension`: the small tier's bundles, checked, within the
    /// extension's seconds (a ``WakeBudget`` that keeps the receipt's share back). Returns whether the edition is now
    /// on the device: only then may the extension change the alert's words to "ready".
    public func fetchInExtension(_ wakeUp: EditionWakeUp, arrival: Date) async -> Bool {
        guard let limits = wakeUp.extensionLimits, !wakeUp.isExpired(at: timer.now) else { return false }
        if store.has(editionID: wakeUp.editionID) { return true }
        let started = timer.now
        let budget = WakeBudget.forExtension(limits, start: min(arrival, started), editionDeadline: wakeUp.deadline)
        let context = await context(nil)
        var bytes: Int64 = 0
        var ok = false
        let api = self.api
        if let manifest = try? await budget.spend(.manifest, timer: timer, { try await api.manifest(path: wakeUp.manifestPath) }),
            let plan = manifest.plan(for: .small)
        {
            ok = true
            for (index, bundle) in plan.bundles.enumerated() {
                guard let file = try? await download(bundle, budget: budget),
                    store.place(file, bundle: bundle, index: index, editionID: wakeUp.editionID)
                else {
                    ok = false
                    break
                }
                bytes += bundle.bytes
            }
        }
        if ok { store.markComplete(wakeUp.editionID) }
        let seconds = timer.now.timeIntervalSince(started)
        await deliver(
            ReceiptReport(
                for: wakeUp,
                arrival: arrival,
                now: timer.now,
                result: ok ? .newData : .failed,
                bytes: bytes,
                seconds: seconds,
                context: context
            ),
            budget
        )
        return ok
    }

    /// A bundle fetched in the foreground, cut at the budget's share for downloads.
    private func download(_ bundle: EditionManifest.Bundle, budget: WakeBudget) async throws -> URL {
        let transport = api.transport
        let timeout = api.timeout
        return try await budget.spend(.download, timer: timer) {
            try await transport.download(for: URLRequest(url: bundle.url, timeoutInterval: timeout)).0
        }
    }

    // MARK: background transfers

    /// A background transfer's file arrived. Synchronous: on iOS the file is gone once the session's delegate returns.
    /// - Returns: the edition's receipt when the transfer finishes it (the last bundle, or a file that is not the
    ///   bundle), for the platform to send once per session before it tells the system its events are handled.
    public func transferArrived(_ note: TransferNote, file: URL, at now: Date) -> ReceiptReport? {
        let bundle = EditionManifest.Bundle(url: file, bytes: note.bytes, sha256: note.sha256)
        if !store.place(file, bundle: bundle, index: note.index, editionID: note.editionID) {
            return receipt(note, result: .failed, at: now)
        }
        guard store.allPresent(editionID: note.editionID, count: note.count) else { return nil }
        store.markComplete(note.editionID)
        return receipt(note, result: .newData, at: now)
    }

    /// A background transfer ended in an error (a timeout, no network, cancelled).
    /// - Returns: the edition's receipt, for the platform to send once per session.
    public func transferFailed(_ note: TransferNote, at now: Date) -> ReceiptReport? {
        receipt(note, result: .failed, at: now)
    }

    private func receipt(_ note: TransferNote, result: ReceiptResult, at now: Date) -> ReceiptReport {
        let wakeUp = EditionWakeUp(
            editionID: note.editionID,
            manifestPath: "/v1/editions/\(note.editionID)",
            tier: .small,
            deadline: .distantFuture,
            fetch: [],
            wave: note.wave,
            sentAt: note.sentAt
        )
        let bytes = result == .newData ? store.bytes(editionID: note.editionID, count: note.count) - note.bytesBefore : 0
        return ReceiptReport(
            for: wakeUp,
            arrival: note.arrival,
            now: now,
            result: result,
            bytes: max(0, bytes),
            seconds: now.timeIntervalSince(note.startedAt),
            context: DeviceContext()
        )
    }

    /// Hands the receipt to the courier, which sends it alone within what is left of the budget (the backlog later).
    private func deliver(_ receipt: ReceiptReport, _ budget: WakeBudget) async {
        _ = try? await courier.deliver(receipt, budget: budget, timer: timer)
    }
}
