/// An answer of the simulator, independent of HTTP/1.1 or HTTP/2: status, JSON body, optional `Retry-After`.
struct FCMSimulatorResponse: Sendable, Equatable {
    var status: Int
    var body: String
    var contentType = "application/json; charset=UTF-8"
    var retryAfter: Int?
    /// Latency to add before the answer goes out (a fault).
    var delay: Duration = .zero

    static func json(_ status: Int, _ body: String) -> Self { Self(status: status, body: body) }

    /// FCM's error body: `error.code`, `message`, `status` and the `FcmError` detail naming the `errorCode`.
    static func fcmError(_ code: FCMSimulator.ErrorCode, message: String? = nil, retryAfter: Int? = nil) -> Self {
        let detail = #"[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":""# + code.rawValue + #""}]"#
        var response = googleError(code.httpStatus, status: code.googleStatus, message: message ?? code.defaultMessage, details: detail)
        response.retryAfter = retryAfter
        return response
    }

    /// A Google API error without an FCM detail (UNAUTHENTICATED, PERMISSION_DENIED, NOT_FOUND).
    static func googleError(_ httpStatus: Int, status: String, message: String, details: String? = nil) -> Self {
        var body = #"{"error":{"code":"# + String(httpStatus) + #","message":"# + jsonString(message) + #","status":""# + status + #"""#
        if let details { body += #","details":"# + details }
        body += "}}"
        return .json(httpStatus, body)
    }

    /// An OAuth2 token endpoint error: `{"error": "...", "error_description": "..."}`.
    static func oauthError(_ error: String, _ description: String, status: Int = 400) -> Self {
        .json(status, #"{"error":""# + error + #"","error_description":"# + jsonString(description) + "}")
    }

    static let unauthenticated = googleError(
        401,
        status: "UNAUTHENTICATED",
        message:
            "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential."
    )
}

/// `text` as a JSON string literal, quotes included.
func jsonString(_ text: String) -> String {
    var out = "\""
    out.reserveCapacity(text.utf8.count + 2)
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        case _ where scalar.value < 0x20:
            let hex = String(scalar.value, radix: 16)
            out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out + "\""
}
