import Foundation
import PaperboyClient

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Paperboy's API and the CDN as an app meets them, in one ``HTTPTransport``: each answer configurable (a status,
/// how long it takes in virtual time, a body), every request logged with its instant.
final class FakeServer: HTTPTransport, @unchecked Sendable {
    struct Answer {
        var status = 200
        var body = Data()
        /// Virtual seconds before the answer comes (a slow server, a trickling download).
        var takes: TimeInterval = 0
        /// Keeps going when the task is cancelled, as a request that does not honour cancellation would.
        var ignoresCancellation = false
    }

    struct Request: Equatable {
        var method: String
        var path: String
        var at: Date
        var body: Data?
    }

    let timer: VirtualTimer
    private let answers = Guarded<[String: Answer]>([:])
    private let requests = Guarded<[Request]>([])
    private let downloads: URL

    init(timer: VirtualTimer) {
        self.timer = timer
        downloads = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-downloads-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: downloads, withIntermediateDirectories: true)
    }

    /// Answers `METHOD /path` so from now on.
    func answer(_ method: String, _ path: String, _ answer: Answer) {
        answers { $0["\(method) \(path)"] = answer }
    }

    var log: [Request] { requests { $0 } }

    /// The requests' `METHOD /path`, in order.
    var calls: [String] { log.map { "\($0.method) \($0.path)" } }

    /// The receipts posted, in order.
    var receipts: [ReceiptReport] {
        log.filter { $0.path.hasSuffix("/receipts") }.compactMap { $0.body.flatMap { try? JSONDecoder().decode(ReceiptReport.self, from: $0) } }
    }

    func data(for request: URLRequest) async throws -> (Data, URLResponse) {
        try await respond(request)
    }

    func download(for request: URLRequest) async throws -> (URL, URLResponse) {
        let (data, response) = try await respond(request)
        let file = downloads.appendingPathComponent(UUID().uuidString)
        try data.write(to: file)
        // Written when the bytes arrived, in the test's time.
        try FileManager.default.setAttributes([.modificationDate: timer.now], ofItemAtPath: file.path)
        return (file, response)
    }

    private func respond(_ request: URLRequest) async throws -> (Data, URLResponse) {
        let url = request.url!
        let method = request.httpMethod ?? "GET"
        requests { $0.append(Request(method: method, path: url.path, at: timer.now, body: request.httpBody)) }
        timer.touch()
        var answer = answers { $0["\(method) \(url.path)"] } ?? defaultAnswer(method, url.path, body: request.httpBody)
        if answer.takes > 0 {
            if answer.ignoresCancellation {
                let timer = self.timer
                let takes = answer.takes
                try? await Task { try await timer.sleep(seconds: takes) }.value
            } else {
                try await timer.sleep(seconds: answer.takes)
            }
        }
        if method == "POST", url.path.hasSuffix("/receipts"), answer.body.isEmpty { answer.body = request.httpBody ?? Data() }
        let response = HTTPURLResponse(url: url, statusCode: answer.status, httpVersion: "HTTP/1.1", headerFields: [:])!
        return (answer.body, response)
    }

    /// A receipt is stored (201, echoed), an open is counted (204); anything else is not found.
    private func defaultAnswer(_ method: String, _ path: String, body: Data?) -> Answer {
        if method == "POST", path.hasSuffix("/receipts") { return Answer(status: 201) }
        if method == "POST", path.hasSuffix("/opens") { return Answer(status: 204) }
        return Answer(status: 404, body: Data(#"{"error": {"code": "not_found", "message": "no such thing"}}"#.utf8))
    }
}

/// The background sessions, faked: what was handed over, and whether transfers run.
final class FakeTransfers: BackgroundTransfers, @unchecked Sendable {
    private let state = Guarded<(started: [BackgroundTransfer], deadline: Date?, running: Bool)>(([], nil, false))

    var started: [BackgroundTransfer] { state { $0.started } }
    var deadline: Date? { state { $0.deadline } }

    /// Whether the edition's session says it has transfers.
    func setRunning(_ running: Bool) { state { $0.running = running } }

    func hasTransfers(editionID: String) async -> Bool { state { $0.running } }

    func start(_ transfers: [BackgroundTransfer], editionID: String, deadline: Date) {
        state { state in
            state.started += transfers
            state.deadline = deadline
            state.running = true
        }
    }
}

/// Background time for the outbox, faked: the instants asked for.
final class FakeBacklog: BacklogRefresh, @unchecked Sendable {
    private let asked = Guarded<[Date]>([])

    var requests: [Date] { asked { $0 } }

    func schedule(earliest: Date) { asked { $0.append(earliest) } }
}
