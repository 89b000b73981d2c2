// iOS glue: compiled only where UIKit and CryptoKit are (an iOS app or extension), not on the Linux machine that
// tests this package; docs/app-integration.md says what is tested where. It uses the tested parts: the push's
// decoding, the tier's fallback, the receipt and the courier.
#if canImport(UIKit) && canImport(CryptoKit)
import CryptoKit
import Foundation
import UIKit

#if canImport(FoundationNetworking)
import FoundationNetworking  // only where scripts/check-client-glue.sh type-checks this file, on Linux
#endif

/// Gets an edition onto the device inside iOS's rules: the manifest and the first bundle in the ~30 seconds a
/// background push gives, the rest in a background `URLSession` of its own whose `timeoutIntervalForResource`
/// ends at the deadline, never a second download of an edition while one runs, every file's length and SHA-256
/// checked, and the receipt handed to the ``ReceiptCourier`` and sent *before* iOS is told the work is done
/// (iOS may suspend the app as soon as the completion handler runs).
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
public final class EditionDownloader: NSObject, URLSessionDownloadDelegate, @unchecked Sendable {
    /// Each edition's background session is `<prefix>.<edition id>`.
    public let sessionPrefix: String
    /// Where editions go: `<directory>/<edition id>/<n>.bundle`, and `complete` once every bundle is checked.
    public let directory: URL
    let api: PaperboyAPIClient
    let courier: ReceiptCourier
    private let lock = NSLock()
    private var sessions: [String: URLSession] = [:]
    private var eventHandlers: [String: () -> Void] = [:]
    private var receiptsInFlight: [String: Task<Void, Never>] = [:]

    /// What a background task carries in its `taskDescription`: enough to finish the edition after iOS
    /// relaunched the app for the session's events.
    struct TaskNote: Codable {
        var editionID: String
        var index: Int
        var count: Int
        var bytes: Int64
        var sha256: String
        var wave: Int
        var sentAt: Date?
        var arrival: Date
        var startedAt: Date
        var bytesBefore: Int64
    }

    public init(sessionPrefix: String, directory: URL, api: PaperboyAPIClient, courier: ReceiptCourier) {
        self.sessionPrefix = sessionPrefix
        self.directory = directory
        self.api = api
        self.courier = courier
    }

    /// Whether the edition is on the device, every bundle checked.
    public func has(editionID: String) -> Bool {
        FileManager.default.fileExists(atPath: folder(editionID).appendingPathComponent("complete").path)
    }

    /// The push handler's work. Answers what to tell iOS, after the receipt (if any) has been sent or kept.
    /// - Parameter budget: the seconds of the ~30 that the manifest and the first bundle may take.
    public func handle(
        _ wakeUp: EditionWakeUp,
        arrival: Date,
        backgroundRefresh: Bool?,
        budget: TimeInterval = 22
    ) async
        -> UIBackgroundFetchResult
    {
        let started = Date()
        guard !wakeUp.isExpired(at: started) else { return .noData }  // too late: nothing, and no receipt
        let context = await DeviceContext.current(backgroundRefresh: backgroundRefresh)
        if has(editionID: wakeUp.editionID) {
            await deliver(ReceiptReport(for: wakeUp, arrival: arrival, now: Date(), result: .noData, context: context))
            return .noData
        }
        // An earlier wave's download goes on, and posts the receipt.
        if await isRunning(wakeUp.editionID, deadline: wakeUp.deadline) { return .noData }
        let manifest: EditionManifest
        do {
            manifest = try await api.manifest(path: wakeUp.manifestPath)
        } catch {
            await deliver(ReceiptReport(for: wakeUp, arrival: arrival, now: Date(), result: .failed, context: context))
            return .failed
        }
        guard let plan = manifest.plan(for: wakeUp.tier) else {
            await deliver(ReceiptReport(for: wakeUp, arrival: arrival, now: Date(), result: .failed, context: context))
            return .failed
        }
        try? FileManager.default.createDirectory(at: folder(wakeUp.editionID), withIntermediateDirectories: true)
        var first = 0
        var bytesDone: Int64 = 0
        // The first bundle in the push's own time: a background session started now runs when iOS likes.
        if let bundle = plan.bundles.first, budget - Date().timeIntervalSince(started) > 5 {
            var request = URLRequest(url: bundle.url)
            request.timeoutInterval = budget - Date().timeIntervalSince(started)
            if let (file, _) = try? await URLSession.shared.download(for: request), place(file, bundle: bundle, index: 0, editionID: wakeUp.editionID)
            {
                first = 1
                bytesDone = bundle.bytes
            }
        }
        if first == plan.bundles.count {
            markComplete(wakeUp.editionID)
            let seconds = Date().timeIntervalSince(started)
            await deliver(
                ReceiptReport(for: wakeUp, arrival: arrival, now: Date(), result: .newData, bytes: bytesDone, seconds: seconds, context: context)
            )
            return .newData
        }
        // The rest in the edition's background session, which ends at the deadline.
        let session = backgroundSession(wakeUp.editionID, deadline: wakeUp.deadline)
        for index in first..<plan.bundles.count {
            let bundle = plan.bundles[index]
            let task = session.downloadTask(with: bundle.url)
            let note = TaskNote(
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
            task.taskDescription = (try? JSONEncoder().encode(note)).map { String(decoding: $0, as: UTF8.self) }
            task.countOfBytesClientExpectsToReceive = bundle.bytes
            task.resume()
        }
        return .newData
    }

    /// For `application(_:handleEventsForBackgroundURLSession:completionHandler:)`: re-creates the session iOS
    /// relaunched the app for, and calls `completionHandler` once its events are handled and their receipts
    /// sent. Returns false for a session that is not this downloader's.
    public func handleEvents(forBackgroundURLSession identifier: String, completionHandler: @escaping () -> Void) -> Bool {
        guard identifier.hasPrefix(sessionPrefix + ".") else { return false }
        let editionID = String(identifier.dropFirst(sessionPrefix.count + 1))
        lock.withLock { eventHandlers[identifier] = completionHandler }
        _ = backgroundSession(editionID, deadline: nil)
        return true
    }

    /// The extension's work for an alert that carries `extension`: the small tier's bundles, checked, inside the
    /// extension's seconds (less a margin for the receipt). Returns whether the edition is now on the device: only
    /// then may the extension change the alert's words to "ready".
    public func fetchInExtension(_ wakeUp: EditionWakeUp, arrival: Date) async -> Bool {
        guard let limits = wakeUp.extensionLimits, !wakeUp.isExpired(at: Date()) else { return false }
        if has(editionID: wakeUp.editionID) { return true }
        let started = Date()
        let budget = TimeInterval(limits.seconds) - 8
        let context = await DeviceContext.current(backgroundRefresh: nil)
        var bytes: Int64 = 0
        var ok = false
        if let manifest = try? await api.manifest(path: wakeUp.manifestPath), let plan = manifest.plan(for: .small) {
            try? FileManager.default.createDirectory(at: folder(wakeUp.editionID), withIntermediateDirectories: true)
            ok = true
            for (index, bundle) in plan.bundles.enumerated() {
                let left = budget - Date().timeIntervalSince(started)
                var request = URLRequest(url: bundle.url)
                request.timeoutInterval = max(1, left)
                guard left > 1, let (file, _) = try? await URLSession.shared.download(for: request),
                    place(file, bundle: bundle, index: index, editionID: wakeUp.editionID)
                else {
                    ok = false
                    break
                }
                bytes += bundle.bytes
            }
        }
        if ok { markComplete(wakeUp.editionID) }
        let seconds = Date().timeIntervalSince(started)
        await deliver(
            ReceiptReport(
                for: wakeUp,
                arrival: arrival,
                now: Date(),
                result: ok ? .newData : .failed,
                bytes: bytes,
                seconds: seconds,
                context: context
            )
        )
        return ok
    }

    // MARK: URLSessionDownloadDelegate

    public func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {
        guard let note = note(of: downloadTask) else { return }
        let bundle = EditionManifest.Bundle(url: downloadTask.originalRequest?.url ?? location, bytes: note.bytes, sha256: note.sha256)
        // The file at `location` is gone once this method returns: checked and moved now.
        if !place(location, bundle: bundle, index: note.index, editionID: note.editionID) {
            finish(note, result: .failed, session: session)
            return
        }
        let present = (0..<note.count).allSatisfy { FileManager.default.fileExists(atPath: bundleURL(note.editionID, $0).path) }
        if present {
            markComplete(note.editionID)
            finish(note, result: .newData, session: session)
        }
    }

    public func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard error != nil, let note = note(of: task) else { return }
        finish(note, result: .failed, session: session)
    }

    public func urlSessionDidFinishEvents(forBackgroundURLSession session: URLSession) {
        guard let identifier = session.configuration.identifier else { return }
        let (handler, receipt) = lock.withLock { (eventHandlers.removeValue(forKey: identifier), receiptsInFlight.removeValue(forKey: identifier)) }
        Task {
            await receipt?.value  // the receipt leaves before iOS may suspend the app again
            await MainActor.run { handler?() }
        }
    }

    // MARK: the parts

    private func folder(_ editionID: String) -> URL { directory.appendingPathComponent(editionID, isDirectory: true) }

    private func bundleURL(_ editionID: String, _ index: Int) -> URL { folder(editionID).appendingPathComponent("\(index).bundle") }

    /// Marks the edition whole. Should the marker not be written, a later wave downloads it again: no receipt is
    /// lost, so the failure needs no handling beyond that.
    private func markComplete(_ editionID: String) {
        _ = FileManager.default.createFile(atPath: folder(editionID).appendingPathComponent("complete").path, contents: Data())
    }

    /// Checks a downloaded file's length and SHA-256 and moves it into place; false (and the file removed) when
    /// it is not the bundle.
    private func place(_ file: URL, bundle: EditionManifest.Bundle, index: Int, editionID: String) -> Bool {
        defer { try? FileManager.default.removeItem(at: file) }
        guard let size = (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? NSNumber)?.int64Value, size == bundle.bytes,
            let handle = try? FileHandle(forReadingFrom: file)
        else { return false }
        defer { try? handle.close() }
        var hasher = SHA256()
        while let chunk = try? handle.read(upToCount: 1 << 20), !chunk.isEmpty { hasher.update(data: chunk) }
        let digest = hasher.finalize().map { String(format: "%02x", $0) }.joined()
        guard digest == bundle.sha256.lowercased() else { return false }
        let target = bundleURL(editionID, index)
        try? FileManager.default.createDirectory(at: folder(editionID), withIntermediateDirectories: true)
        try? FileManager.default.removeItem(at: target)
        return (try? FileManager.default.moveItem(at: file, to: target)) != nil
    }

    private func note(of task: URLSessionTask) -> TaskNote? {
        task.taskDescription.flatMap { try? JSONDecoder().decode(TaskNote.self, from: Data($0.utf8)) }
    }

    /// One receipt per edition's session: on the first failure the other transfers are cancelled.
    private func finish(_ note: TaskNote, result: ReceiptResult, session: URLSession) {
        let identifier = session.configuration.identifier ?? ""
        let claimed = lock.withLock { () -> Bool in
            guard receiptsInFlight[identifier] == nil else { return false }
            receiptsInFlight[identifier] = Task {}
            return true
        }
        guard claimed else { return }
        if result == .failed { session.invalidateAndCancel() }
        let wakeUp = EditionWakeUp(
            editionID: note.editionID,
            manifestPath: "/v1/editions/\(note.editionID)",
            tier: .small,
            deadline: .distantFuture,
            fetch: [],
            wave: note.wave,
            sentAt: note.sentAt
        )
        let bytes =
            result == .newData
            ? (0..<note.count).reduce(Int64(0)) { total, index in
                total
                    + ((try? FileManager.default.attributesOfItem(atPath: bundleURL(note.editionID, index).path)[.size] as? NSNumber)?.int64Value ?? 0)
            } - note.bytesBefore : 0
        let receipt = ReceiptReport(
            for: wakeUp,
            arrival: note.arrival,
            now: Date(),
            result: result,
            bytes: max(0, bytes),
            seconds: Date().timeIntervalSince(note.startedAt),
            context: DeviceContext()
        )
        let courier = self.courier
        let task = Task { _ = try? await courier.post(receipt) }
        lock.withLock { receiptsInFlight[identifier] = task }
    }

    private func deliver(_ receipt: ReceiptReport) async {
        _ = try? await courier.post(receipt)
    }

    /// Whether the edition's background session has transfers: it is re-created (once per process) to ask, which
    /// after a relaunch also reconnects it to the transfers iOS kept.
    private func isRunning(_ editionID: String, deadline: Date) async -> Bool {
        !(await backgroundSession(editionID, deadline: deadline).allTasks).isEmpty
    }

    private func backgroundSession(_ editionID: String, deadline: Date?) -> URLSession {
        let identifier = sessionPrefix + "." + editionID
        return lock.withLock {
            if let session = sessions[identifier] { return session }
            let configuration = URLSessionConfiguration.background(withIdentifier: identifier)
            configuration.sessionSendsLaunchEvents = true
            if let deadline { configuration.timeoutIntervalForResource = max(60, deadline.timeIntervalSinceNow) }
            let session = URLSession(configuration: configuration, delegate: self, delegateQueue: nil)
            sessions[identifier] = session
            return session
        }
    }
}
#endif
