// iOS glue: compiled only where UIKit and CryptoKit are (an iOS app or extension), not on the Linux machine that
// tests this package; docs/app-integration.md says what is tested where. Every decision is the portable
// EditionDownloader's (tested on Linux): this file only gives it URLSession's background sessions, CryptoKit's
// SHA-256 and UIKit's context, and answers UIKit's types.
#if canImport(UIKit) && canImport(CryptoKit)
import CryptoKit
import Foundation
import UIKit

#if canImport(FoundationNetworking)
import FoundationNetworking  // only where scripts/check-client-glue.sh type-checks this file, on Linux
#endif

extension EditionDownloader {
    /// The downloader of an iOS app or extension: background sessions named `<sessionPrefix>.<edition id>`, editions
    /// in `directory` (in the App Group's container), SHA-256 by CryptoKit, the device's context from UIKit.
    ///
    /// In the app delegate:
    /// ```swift
    /// func application(_ app: UIApplication, didReceiveRemoteNotification userInfo: [AnyHashable: Any],
    ///                  fetchCompletionHandler completion: @escaping (UIBackgroundFetchResult) -> Void) {
    ///     let arrival = Date()
    ///     guard let wakeUp = try? EditionWakeUp.decode(userInfo: userInfo) else { return completion(.noData) }
    ///     Task { completion(await downloader.handle(wakeUp, arrival: arrival, backgroundRefresh: app.backgroundRefreshStatus == .available)) }
    /// }
    /// func application(_ app: UIApplication, handleEventsForBackgroundURLSession identifier: String,
    ///                  completionHandler: @escaping () -> Void) {
    ///     if !downloader.handleEvents(forBackgroundURLSession: identifier, completionHandler: completionHandler) { completionHandler() }
    /// }
    /// ```
    /// - Parameter backlog: background time for the receipts a wake leaves in the outbox: in the app an
    ///   ``AppRefreshBacklog``; nil in an extension.
    public convenience init(
        sessionPrefix: String,
        directory: URL,
        api: PaperboyAPIClient,
        courier: ReceiptCourier,
        backlog: (any BacklogRefresh)? = nil
    ) {
        let transfers = URLSessionBackgroundTransfers(sessionPrefix: sessionPrefix)
        self.init(
            store: EditionStore(directory: directory, digest: Self.sha256),
            api: api,
            courier: courier,
            transfers: transfers,
            context: { backgroundRefresh in await DeviceContext.current(backgroundRefresh: backgroundRefresh) },
            backlog: backlog
        )
        transfers.downloader = self
    }

    /// ``wake(_:arrival:backgroundRefresh:budget:)`` answered as UIKit's `UIBackgroundFetchResult`.
    public func handle(_ wakeUp: EditionWakeUp, arrival: Date, backgroundRefresh: Bool?) async -> UIBackgroundFetchResult {
        switch await wake(wakeUp, arrival: arrival, backgroundRefresh: backgroundRefresh) {
        case .newData: .newData
        case .noData: .noData
        case .failed: .failed
        }
    }

    /// For `application(_:handleEventsForBackgroundURLSession:completionHandler:)`: re-creates the session iOS
    /// relaunched the app for, and calls `completionHandler` once its events are handled and their receipts
    /// sent. Returns false for a session that is not this downloader's.
    public func handleEvents(forBackgroundURLSession identifier: String, completionHandler: @escaping @Sendable () -> Void) -> Bool {
        guard let transfers = transfers as? URLSessionBackgroundTransfers else { return false }
        return transfers.handleEvents(forBackgroundURLSession: identifier, completionHandler: completionHandler)
    }

    /// A file's SHA-256 in lowercase hex, read a megabyte at a time (an extension has 24 MB).
    static func sha256(_ file: URL) throws -> String {
        let handle = try FileHandle(forReadingFrom: file)
        defer { try? handle.close() }
        var hasher = SHA256()
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty { hasher.update(data: chunk) }
        return hasher.finalize().map { String(format: "%02x", $0) }.joined()
    }
}

/// ``BackgroundTransfers`` as one background `URLSession` per edition (`<prefix>.<edition id>`), whose
/// `timeoutIntervalForResource` ends at the deadline and which relaunches the app for its events. Its delegate hands
/// each event to the ``EditionDownloader`` and sends the receipt it answers, once per session, before iOS is told
/// the events are handled.
final class URLSessionBackgroundTransfers: NSObject, BackgroundTransfers, URLSessionDownloadDelegate, @unchecked Sendable {
    let sessionPrefix: String
    /// Set once, right after the downloader is made (it holds this object).
    weak var downloader: EditionDownloader?

    private struct State {
        var sessions = EditionSessions<URLSession>()
        var eventHandlers: [String: @Sendable () -> Void] = [:]
        /// The receipts being sent, per identifier: awaited before iOS is told the session's events are handled.
        var receipts: [String: [UUID: Task<Void, Never>]] = [:]
        /// Transfers to start once the identifier's invalidated session is gone.
        var waiting: [String: (transfers: [BackgroundTransfer], deadline: Date)] = [:]
    }

    private let state = Locked(State())

    init(sessionPrefix: String) {
        self.sessionPrefix = sessionPrefix
    }

    func hasTransfers(editionID: String) async -> Bool {
        // A session being invalidated has none that will finish.
        guard let session = session(editionID, deadline: nil) else { return false }
        return !(await session.allTasks).isEmpty
    }

    func start(_ transfers: [BackgroundTransfer], editionID: String, deadline: Date) {
        let identifier = sessionPrefix + "." + editionID
        guard let session = session(editionID, deadline: deadline) else {
            // The previous attempt's session is still being invalidated: started once it is gone.
            state.withValue { $0.waiting[identifier] = (transfers, deadline) }
            return
        }
        state.withValue { $0.sessions.attemptStarted(identifier) }
        for transfer in transfers {
            let task = session.downloadTask(with: transfer.url)
            task.taskDescription = (try? JSONEncoder().encode(transfer.note)).map { String(decoding: $0, as: UTF8.self) }
            task.countOfBytesClientExpectsToReceive = transfer.note.bytes
            task.resume()
        }
    }

    func handleEvents(forBackgroundURLSession identifier: String, completionHandler: @escaping @Sendable () -> Void) -> Bool {
        guard identifier.hasPrefix(sessionPrefix + ".") else { return false }
        let editionID = String(identifier.dropFirst(sessionPrefix.count + 1))
        state.withValue { $0.eventHandlers[identifier] = completionHandler }
        // Re-created (after a relaunch) so that its delegate gets the events; nil while an invalidated one of this
        // identifier is still going, whose own delegate calls are this one's.
        _ = session(editionID, deadline: nil)
        return true
    }

    // MARK: URLSessionDownloadDelegate

    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {
        guard let note = note(of: downloadTask), let downloader else { return }
        // The file at `location` is gone once this method returns: checked and moved now.
        if let receipt = downloader.transferArrived(note, file: location, at: Date()) { finish(receipt, session: session) }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard error != nil, let note = note(of: task), let downloader else { return }
        if let receipt = downloader.transferFailed(note, at: Date()) { finish(receipt, session: session) }
    }

    func urlSession(_ session: URLSession, didBecomeInvalidWithError error: (any Error)?) {
        guard let identifier = session.configuration.identifier else { return }
        let waiting = state.withValue { state in
            state.sessions.invalidated(identifier, session: session)
            return state.waiting.removeValue(forKey: identifier)
        }
        if let waiting { start(waiting.transfers, editionID: String(identifier.dropFirst(sessionPrefix.count + 1)), deadline: waiting.deadline) }
    }

    func urlSessionDidFinishEvents(forBackgroundURLSession session: URLSession) {
        guard let identifier = session.configuration.identifier else { return }
        let (handler, receipts) = state.withValue { state in
            (state.eventHandlers.removeValue(forKey: identifier), Array((state.receipts[identifier] ?? [:]).values))
        }
        Task {
            for receipt in receipts { await receipt.value }  // the receipt leaves before iOS may suspend the app again
            await MainActor.run { handler?() }
        }
    }

    // MARK: the parts

    private func note(of task: URLSessionTask) -> TransferNote? {
        task.taskDescription.flatMap { try? JSONDecoder().decode(TransferNote.self, from: Data($0.utf8)) }
    }

    /// One receipt per session: on a failure the session's other transfers are cancelled.
    private func finish(_ receipt: ReceiptReport, session: URLSession) {
        guard let identifier = session.configuration.identifier, let courier = downloader?.courier else { return }
        let claimed = state.withValue { $0.sessions.claimReceipt(identifier, session: session) }
        guard claimed else { return }
        if receipt.result == .failed {
            state.withValue { $0.sessions.invalidating(identifier, session: session) }
            session.invalidateAndCancel()
        }
        // Relaunched for the session's events, the app has about as long as for a push: this receipt alone, bounded.
        let budget = WakeBudget(start: Date())
        let key = UUID()
        let task = Task { [state] in
            _ = try? await courier.deliver(receipt, budget: budget, timer: SystemWakeTimer())
            state.withValue { $0.receipts[identifier]?[key] = nil }
        }
        state.withValue { $0.receipts[identifier, default: [:]][key] = task }
    }

    /// The edition's session: the live one, or a new one; nil while its invalidated one is not gone yet.
    private func session(_ editionID: String, deadline: Date?) -> URLSession? {
        let identifier = sessionPrefix + "." + editionID
        return state.withValue { state in
            switch state.sessions.lookup(identifier) {
            case .use(let session): return session
            case .wait: return nil
            case .create: break
            }
            let configuration = URLSessionConfiguration.background(withIdentifier: identifier)
            configuration.sessionSendsLaunchEvents = true
            // Gives up at the deadline, not after: a transfer still running then fails, and posts nothing.
            if let deadline { configuration.timeoutIntervalForResource = max(1, deadline.timeIntervalSinceNow) }
            let session = URLSession(configuration: configuration, delegate: self, delegateQueue: nil)
            state.sessions.add(session, identifier: identifier)
            return session
        }
    }
}
#endif
