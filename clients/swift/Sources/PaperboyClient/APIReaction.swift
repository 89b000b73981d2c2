/// What a client does with an answer of Paperboy's device API: the rules of docs/app-integration.md ("Errors,
/// retries and the rate limit") as one function, so that every call reacts the same way.
public enum APIReaction: Sendable, Equatable {
    /// 2xx: done.
    case done
    /// 404 naming `token`: the device is not registered (erased, or never registered). Register, then send again.
    case registerThenRetry
    /// 401: the key is wrong or revoked. Nothing works until the app ships a new key; stop calling.
    case stopUntilNewKey
    /// 429: the network address is over the rate limit; wait this many seconds (with a second or two of jitter).
    case retryAfter(seconds: Int)
    /// 5xx, 409 (a concurrent change), no answer: send again later, with a growing, jittered delay.
    case retryLater
    /// 400, 413, 404 naming anything but `token`, other 4xx: this request cannot succeed as it is (a bug, or an
    /// edition the server no longer has). Log `field` and the message; do not send it again.
    case drop

    /// The reaction to `status`, the error's `field` (from the JSON body) and `Retry-After` (seconds).
    public static func to(status: Int, field: String?, retryAfter: Int?) -> APIReaction {
        switch status {
        case 200..<300: return .done
        case 401: return .stopUntilNewKey
        case 404 where field == "token": return .registerThenRetry
        case 429: return .retryAfter(seconds: max(1, retryAfter ?? 60))
        case 408, 409, 425, 500..<600: return .retryLater
        case 400..<500: return .drop
        default: return .retryLater
        }
    }
}
