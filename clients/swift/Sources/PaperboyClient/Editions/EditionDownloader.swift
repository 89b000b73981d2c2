import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a wake-up tells the system: on iOS `UIBackgroundFetchResult`'s three cases (Platform/).
public enum WakeResult: Sendable, Equatable {
    case newData, noData, failed

    /// As the receipt says.
    init(_ result: ReceiptResult) {
        switch result {
        case .newData: self = .newData
        case .noData: self = .noData
        case .failed: self = .failed
        }
    }
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
    let backlog: (any BacklogRefresh)?

    /// - Parameters:
    ///   - store: where editions go.
    ///   - api: the API client, for the manifest (its transport also downloads the first bundle).
    ///   - courier: the receipts' outbox.
    ///   - transfers: the background sessions.
    ///   - timer: the time (the system's in use).
    ///   - context: what the device is doing, for the receipt (`DeviceContext.current(backgroundRefresh:)` on iOS).
    ///   - backlog: background time for the receipts a wake leaves in the outbox (none in an extension).
    public init(
        store: EditionStore,
        api: PaperboyAPIClient,
        courier: ReceiptCourier,
        transfers: any BackgroundTransfers,
        timer: any WakeTimer = SystemWakeTimer(),
        context: @escaping @Sendable (_ backgroundRefresh: Bool?) async -> DeviceContext,
        backlog: (any BacklogRefresh)? = nil
    ) {
        self.store = store
        self.api = api
        self.courier = courier
        self.transfers = transfers
        self.timer = timer
        self.context = context
        self.backlog = backlog
    }

    /// Whether the edition is on the device, every bundle checked.
    public func has(editionID: String) -> Bool { store.has(editionID: editionID) }

    /// The push handler's work. Answers what to tell the system, after the receipt (if any) has been sent or kept,
    /// within a ``WakeBudget`` of `seconds` from `arrival`: every step is cut at its share, and only this edition's
    /// receipt is sent before the answer. The edition's store decides who writes: an edition already there is answered
    /// `noData`; one that another download holds (an earlier wave's background session, the extension) is left to it.
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
        let context = await context(backgroundRefresh, budget: budget)
        /// Posts the wake's receipt (`secondsFromPush` at the run) within the budget, and answers the system as it says.
        func answer(_ result: ReceiptResult, bytes: Int64 = 0) async -> WakeResult {
            let seconds = timer.now.timeIntervalSince(started)
            let receipt = ReceiptReport(for: wakeUp, arrival: arrival, now: started, result: result, bytes: bytes, seconds: seconds, context: context)
            await deliver(receipt, budget)
            return WakeResult(result)
        }
        let claim: EditionStore.Claim
        switch await claimForApp(wakeUp.editionID, until: budget.deadline) {
        case .claimed(let mine): claim = mine
        case .held: return await answer(.noData)
        case .busy: return .noData  // the download that holds the edition posts its receipt
        case nil: return await answer(.failed)
        }
        let api = self.api
        let plan: DownloadPlan
        do {
            let manifest = try await budget.spend(.manifest, timer: timer) { try await api.manifest(path: wakeUp.manifestPath) }
            guard let found = manifest.plan(for: wakeUp.tier) else { throw PaperboyAPIError(status: nil, message: "the edition has no bundles") }
            plan = found
            guard try store.extend(claim, editionID: wakeUp.editionID, tier: plan.tier, until: budget.deadline) != nil else { return .noData }
        } catch {
            return await answer(failure(claim, editionID: wakeUp.editionID))
        }
        var first = 0
        var bytesDone: Int64 = 0
        // The first bundle in the push's own time: a background session started now runs when iOS likes.
        if let bundle = plan.bundles.first, let file = try? await download(bundle, budget: budget),
            store.place(file, bundle: bundle, index: 0, claim: claim, editionID: wakeUp.editionID)
        {
            first = 1
            bytesDone = bundle.bytes
        }
        if first == plan.bundles.count {
            let result = finish(claim, editionID: wakeUp.editionID)
            return await answer(result, bytes: result == .newData ? bytesDone : 0)
        }
        // The rest in the edition's background session, which ends at the deadline; the claim lives as long. Not when
        // the deadline is too near for one: the wake says failed while it still may (the next wave, if any, tries).
        guard wakeUp.deadline.timeIntervalSince(timer.now) >= BackgroundTransfer.shortestSession,
            (try? store.extend(claim, editionID: wakeUp.editionID, tier: plan.tier, until: wakeUp.deadline)) != nil
        else { return await answer(failure(claim, editionID: wakeUp.editionID)) }
        let note = TransferNote(
            editionID: wakeUp.editionID,
            claimID: claim.id,
            index: 0,
            count: plan.bundles.count,
            bytes: 0,
            sha256: "",
            wave: wakeUp.wave,
            sentAt: wakeUp.sentAt,
            deadline: wakeUp.deadline,
            arrival: arrival,
            startedAt: started,
            bytesBefore: bytesDone
        )
        let rest = (first..<plan.bundles.count).map { index in
            let bundle = plan.bundles[index]
            var bundleNote = note
            (bundleNote.index, bundleNote.bytes, bundleNote.sha256) = (index, bundle.bytes, bundle.sha256)
            return BackgroundTransfer(url: bundle.url, note: bundleNote)
        }
        transfers.start(rest, editionID: wakeUp.editionID, deadline: wakeUp.deadline)
        return .newData
    }

    /// The app's claim on an edition. Another wake's claim stands (two pushes at once: one downloads); so does a
    /// background session's (it outlives this wake's budget) while the session has transfers; one whose session has
    /// none left (the process was killed, the transfers cancelled) is taken over. Nil when the store cannot be written.
    private func claimForApp(_ editionID: String, until: Date) async -> EditionStore.Claiming? {
        guard let claiming = try? store.claim(editionID, writer: .app, until: until, at: timer.now) else { return nil }
        guard case .busy(let standing) = claiming, standing.writer == .app, standing.until > until else { return claiming }
        if await transfers.hasTransfers(editionID: editionID) { return claiming }
        return try? store.claim(editionID, writer: .app, until: until, at: timer.now, replacing: standing)
    }

    /// What the device is doing, for the receipt; what is known of it (`backgroundRefresh`) when it does not come
    /// within a second or two (the network's first path comes at once, as a rule).
    private func context(_ backgroundRefresh: Bool?, budget: WakeBudget) async -> DeviceContext {
        let read = context
        let known = DeviceContext(backgroundRefresh: backgroundRefresh)
        return
            (try? await TimeLimit.run(seconds: min(2, budget.remaining(at: timer.now)), timer: timer, onTimeout: CancellationError()) {
                await read(backgroundRefresh)
            }) ?? known
    }

    /// The extension's work for an alert that carries `extension`: the small tier's bundles, checked, within the
    /// extension's seconds (a ``WakeBudget`` that keeps the receipt's share back), under the edition store's claim.
    /// Returns whether the edition is now on the device: only then may the extension change the alert's words to
    /// "ready". An edition already there is answered `noData` (and is ready); one the app is downloading is left to
    /// the app, which posts its receipt.
    public func fetchInExtension(_ wakeUp: EditionWakeUp, arrival: Date) async -> Bool {
        guard let limits = wakeUp.extensionLimits, !wakeUp.isExpired(at: timer.now) else { return false }
        let started = timer.now
        let budget = WakeBudget.forExtension(limits, start: min(arrival, started), editionDeadline: wakeUp.deadline)
        let context = await context(nil, budget: budget)
        let claim: EditionStore.Claim
        switch try? store.claim(wakeUp.editionID, writer: .appExtension, until: budget.deadline, at: started) {
        case .claimed(let mine): claim = mine
        case .held:
            await deliver(ReceiptReport(for: wakeUp, arrival: arrival, now: started, result: .noData, context: context), budget)
            return true
        case .busy, nil:
            return false
        }
        var bytes: Int64 = 0
        var placed = false
        let api = self.api
        if let manifest = try? await budget.spend(.manifest, timer: timer, { try await api.manifest(path: wakeUp.manifestPath) }),
            let plan = manifest.plan(for: .small),
            (try? store.extend(claim, editionID: wakeUp.editionID, tier: plan.tier, until: budget.deadline)) != nil
        {
            placed = true
            for (index, bundle) in plan.bundles.enumerated() {
                guard let file = try? await download(bundle, budget: budget),
                    store.place(file, bundle: bundle, index: index, claim: claim, editionID: wakeUp.editionID)
                else {
                    placed = false
                    break
                }
                bytes += bundle.bytes
            }
        }
        let result = placed ? finish(claim, editionID: wakeUp.editionID) : failure(claim, editionID: wakeUp.editionID)
        let seconds = timer.now.timeIntervalSince(started)
        await deliver(
            ReceiptReport(
                for: wakeUp,
                arrival: arrival,
                now: started,
                result: result,
                bytes: result == .newData ? bytes : 0,
                seconds: seconds,
                context: context
            ),
            budget
        )
        return result != .failed
    }

    /// Completes the claim: `newData` when its bundles are the edition now, `noData` when it was there already,
    /// `failed` when the store could not be written.
    private func finish(_ claim: EditionStore.Claim, editionID: String) -> ReceiptResult {
        switch try? store.complete(claim, editionID: editionID) {
        case .committed: return .newData
        case .alreadyHeld: return .noData
        case nil:
            store.release(claim, editionID: editionID)
            return .failed
        }
    }

    private func failure(_ claim: EditionStore.Claim, editionID: String) -> ReceiptResult {
        store.release(claim, editionID: editionID)
        return .failed
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
    ///   bundle), for the platform to send before it tells the system its events are handled; nil otherwise, at or
    ///   after the deadline (the edition is kept, nothing is posted), and for a transfer whose claim is no longer the
    ///   edition's (its attempt ended, or another writer took over).
    public func transferArrived(_ note: TransferNote, file: URL, at now: Date) -> ReceiptReport? {
        guard let claim = store.claim(of: note.editionID), claim.id == note.claimID else {
            try? FileManager.default.removeItem(at: file)
            return nil
        }
        let bundle = EditionManifest.Bundle(url: file, bytes: note.bytes, sha256: note.sha256)
        guard store.place(file, bundle: bundle, index: note.index, claim: claim, editionID: note.editionID) else {
            let got = store.arrived(claim, editionID: note.editionID)
            return receipt(note, result: failure(claim, editionID: note.editionID), bytes: got.bytes, lastArrival: got.last, at: now)
        }
        guard store.hasAll(note.count, claim: claim, editionID: note.editionID) else { return nil }
        let got = store.arrived(claim, editionID: note.editionID)
        let result = finish(claim, editionID: note.editionID)
        return receipt(note, result: result, bytes: result == .newData ? got.bytes - note.bytesBefore : 0, lastArrival: got.last, at: now)
    }

    /// A background transfer ended in an error (a timeout, no network, cancelled).
    /// - Returns: the edition's receipt, once per attempt (nil for its other transfers), and never at or after the
    ///   deadline: a session times out then, and the guide allows no receipt after it.
    public func transferFailed(_ note: TransferNote, at now: Date) -> ReceiptReport? {
        guard let claim = store.claim(of: note.editionID), claim.id == note.claimID else { return nil }
        let got = store.arrived(claim, editionID: note.editionID)
        return receipt(note, result: failure(claim, editionID: note.editionID), bytes: got.bytes, lastArrival: got.last, at: now)
    }

    /// A background attempt's receipt: nil at or after the deadline. `secondsFromPush` is the wake's (how long the
    /// system held the push, to the run); `seconds` run from the wake to the last bytes' arrival, not to the hour
    /// iOS delivered the session's events.
    private func receipt(_ note: TransferNote, result: ReceiptResult, bytes: Int64, lastArrival: Date?, at now: Date) -> ReceiptReport? {
        guard now < note.deadline else { return nil }
        let wakeUp = EditionWakeUp(
            editionID: note.editionID,
            manifestPath: "/v1/editions/\(note.editionID)",
            tier: .small,
            deadline: note.deadline,
            fetch: [],
            wave: note.wave,
            sentAt: note.sentAt
        )
        let downloaded = lastArrival.map { min($0, now) } ?? note.startedAt
        return ReceiptReport(
            for: wakeUp,
            arrival: note.arrival,
            now: note.startedAt,
            result: result,
            bytes: max(0, bytes),
            seconds: downloaded.timeIntervalSince(note.startedAt),
            context: DeviceContext()
        )
    }

    /// Hands the receipt to the courier, which sends it alone within what is left of the budget (the backlog later).
    private func deliver(_ receipt: ReceiptReport, _ budget: WakeBudget) async {
        _ = try? await courier.deliver(receipt, budget: budget, timer: timer)
        if let backlog, let earliest = await courier.nextAttempt() { backlog.schedule(earliest: earliest) }
    }
}
