import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Paperboy's device API, for an app: register, read the device, read an edition, post a receipt, report an open,
/// remove or erase the device. Each call sends the app's device API key in `X-API-Key` and answers the decoded value, or
/// throws ``PaperboyAPIError`` with the status, the error's code and field, `Retry-After`, and the
/// ``APIReaction`` to it. Foreground calls: background transfers are the platform's (Platform/).
///
/// The calls are declared `throws`, not `throws(PaperboyAPIError)`, so that Swift 5.9 (Xcode 15) compiles them; every
/// error they throw is a ``PaperboyAPIError`` (``PaperboyAPIError/init(_:)`` reads any error as one).
public struct PaperboyAPIClient: Sendable {
    /// Where `paperboy serve` (or the proxy before it) answers, e.g. `https://push.example.com`.
    public var baseURL: URL
    let apiKey: String
    let transport: any HTTPTransport
    /// How long a call may wait for data before it counts as no answer (`URLRequest.timeoutInterval`, an idle
    /// timeout, not a total: in a wake-up, ``WakeBudget`` bounds the total).
    public var timeout: TimeInterval

    public init(baseURL: URL, apiKey: String, session: URLSession = .shared, timeout: TimeInterval = 20) {
        self.init(baseURL: baseURL, apiKey: apiKey, transport: URLSessionTransport(session: session), timeout: timeout)
    }

    /// - Parameter transport: the HTTP; tests answer as Paperboy would.
    public init(baseURL: URL, apiKey: String, transport: any HTTPTransport, timeout: TimeInterval = 20) {
        self.baseURL = baseURL
        self.apiKey = apiKey
        self.transport = transport
        self.timeout = timeout
    }

    /// `PUT /v1/devices/{token}`: at every launch, and when the token or a setting changes.
    /// - Returns: the device as stored, and whether it was created (201) rather than updated (200).
    public func register(
        _ token: PushToken,
        _ registration: DeviceRegistration
    ) async throws -> (
        device: RegisteredDevice, created: Bool
    ) {
        let (data, status) = try await send("PUT", "/v1/devices/\(token.pathSegment)", body: registration)
        return (try decode(RegisteredDevice.self, data), status == 201)
    }

    /// `GET /v1/devices/{token}`: what Paperboy holds about this device.
    public func device(_ token: PushToken) async throws -> RegisteredDevice {
        try decode(RegisteredDevice.self, try await send("GET", "/v1/devices/\(token.pathSegment)").data)
    }

    /// `DELETE /v1/devices/{token}`: stops the broadcasts to the device (kept, inactive), or with `erase`
    /// deletes it with its receipts and deliveries (the reader asked to have their data erased).
    public func remove(_ token: PushToken, erase: Bool = false) async throws {
        _ = try await send("DELETE", "/v1/devices/\(token.pathSegment)" + (erase ? "?erase=true" : ""))
    }

    /// The edition at a push's `manifest` path.
    public func manifest(path: String) async throws -> EditionManifest {
        try decode(EditionManifest.self, try await send("GET", path).data)
    }

    /// `GET /v1/editions/latest?publication=…`: the newest edition, for an app opened without a push.
    public func latestEdition(publication: String) async throws -> EditionManifest {
        var allowed = CharacterSet.urlQueryAllowed
        allowed.remove(charactersIn: "&=+#")
        let name = publication.addingPercentEncoding(withAllowedCharacters: allowed) ?? publication
        return try decode(EditionManifest.self, try await send("GET", "/v1/editions/latest?publication=\(name)").data)
    }

    /// `POST /v1/devices/{token}/receipts`. Prefer ``ReceiptCourier``, which keeps the receipt until it is stored.
    /// - Returns: the receipt Paperboy holds (the first one, or a success that replaced a `failed` one), and
    ///   whether this one was the first (201).
    public func postReceipt(
        _ receipt: ReceiptReport,
        token: PushToken
    ) async throws -> (
        receipt: StoredReceipt, created: Bool
    ) {
        let (data, status) = try await send("POST", "/v1/devices/\(token.pathSegment)/receipts", body: receipt)
        return (try decode(StoredReceipt.self, data), status == 201)
    }

    /// `POST /v1/devices/{token}/opens`: the app came to the foreground, now. Paperboy learns the reader's usual first
    /// open from these reports and measures whether the edition was there (`readyAtOpen`). Call it on every
    /// foreground; on an error drop it and never send it later: the report's time is what Paperboy learns.
    public func reportOpen(_ token: PushToken) async throws {
        _ = try await send("POST", "/v1/devices/\(token.pathSegment)/opens")
    }

    private struct NoBody: Encodable {}

    private func send(_ method: String, _ path: String) async throws -> (data: Data, status: Int) {
        try await send(method, path, body: NoBody?.none)
    }

    private func send(_ method: String, _ path: String, body: (some Encodable)?) async throws -> (data: Data, status: Int) {
        let base = baseURL.absoluteString.hasSuffix("/") ? String(baseURL.absoluteString.dropLast()) : baseURL.absoluteString
        guard let url = URL(string: base + path) else { throw PaperboyAPIError(status: nil, message: "\(base + path) is not a URL") }
        var request = URLRequest(url: url, timeoutInterval: timeout)
        request.httpMethod = method
        request.setValue(apiKey, forHTTPHeaderField: "X-API-Key")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        if let body {
            do {
                request.httpBody = try JSONEncoder().encode(body)
            } catch {
                throw PaperboyAPIError(status: nil, message: "the body could not be encoded: \(error)")
            }
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await transport.data(for: request)
        } catch {
            throw PaperboyAPIError(status: nil, message: "\(method) \(path): \(error.localizedDescription)")
        }
        guard let http = response as? HTTPURLResponse else {
            throw PaperboyAPIError(status: nil, message: "\(method) \(path): not an HTTP answer")
        }
        guard (200..<300).contains(http.statusCode) else {
            throw Self.error(status: http.statusCode, data: data, retryAfter: http.value(forHTTPHeaderField: "Retry-After"))
        }
        return (data, http.statusCode)
    }

    /// The API's error body, `{"error": {"code", "field", "message"}}`, or the status alone when a proxy answered.
    static func error(status: Int, data: Data, retryAfter: String?) -> PaperboyAPIError {
        struct Body: Decodable {
            struct Detail: Decodable {
                var code: String
                var field: String?
                var message: String
            }
            var error: Detail
        }
        let retry = retryAfter.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard let body = try? JSONDecoder().decode(Body.self, from: data) else {
            return PaperboyAPIError(status: status, message: "HTTP \(status) without Paperboy's error body", retryAfter: retry)
        }
        return PaperboyAPIError(status: status, code: body.error.code, field: body.error.field, message: body.error.message, retryAfter: retry)
    }

    private func decode<Value: Decodable>(_ type: Value.Type, _ data: Data) throws -> Value {
        do {
            return try JSONDecoder().decode(type, from: data)
        } catch {
            throw PaperboyAPIError(status: nil, message: "the answer is not a \(Value.self): \(error)")
        }
    }
}
