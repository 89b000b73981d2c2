package paperboy.client

/**
 * What a client does with an answer of Paperboy's device API: the rules of docs/app-integration.md ("Errors,
 * retries and the rate limit") as one function, as `APIReaction` in the Swift client, so that every call reacts
 * the same way.
 */
sealed class ApiReaction {
    /** 2xx: done. */
    object Done : ApiReaction() {
        override fun toString() = "Done"
    }

    /** 404 naming `token`: the device is not registered (erased, or never registered). Register, then send again. */
    object RegisterThenRetry : ApiReaction() {
        override fun toString() = "RegisterThenRetry"
    }

    /** 401: the key is wrong or revoked. Nothing works until the app ships a new key; stop calling. */
    object StopUntilNewKey : ApiReaction() {
        override fun toString() = "StopUntilNewKey"
    }

    /** 429: the network address is over the rate limit; wait this many seconds (plus a second or two of jitter). */
    data class RetryAfter(val seconds: Int) : ApiReaction()

    /** 5xx, 408, 409, 425, no answer, anything unexpected: send again later, with a growing, jittered delay. */
    object RetryLater : ApiReaction() {
        override fun toString() = "RetryLater"
    }

    /**
     * 400, 413, 404 naming anything but `token`, other 4xx (410 included: Paperboy's API never answers it to an
     * app): this request cannot succeed as it is. Log the field and the message; do not send it again.
     */
    object Drop : ApiReaction() {
        override fun toString() = "Drop"
    }

    companion object {
        /** The reaction to [status], the error's [field] (from the JSON body) and `Retry-After` in seconds. */
        @JvmStatic
        fun to(status: Int, field: String?, retryAfter: Int?): ApiReaction = when {
            status in 200..299 -> Done
            status == 401 -> StopUntilNewKey
            status == 404 && field == "token" -> RegisterThenRetry
            status == 429 -> RetryAfter(Math.max(1, retryAfter ?: 60))
            status == 408 || status == 409 || status == 425 || status in 500..599 -> RetryLater
            status in 400..499 -> Drop
            else -> RetryLater
        }

        /** The reaction when no answer came (no network, the deadline passed). */
        @JvmStatic
        fun toNoAnswer(): ApiReaction = RetryLater
    }
}

/** An answer of Paperboy's API that was not a success, or no answer at all (`status` null). */
class PaperboyApiException @JvmOverloads constructor(
    /** The HTTP status; null when no answer came (no network, the deadline passed). */
    val status: Int?,
    /** The error's `code` (`missing_field`, `not_found`, `rate_limited`, …), when the body had one. */
    val code: String? = null,
    /** The input at fault (`token`, `editionId`, `subscriptions[1]`, …), when there is one. */
    val field: String? = null,
    val detail: String,
    /** `Retry-After`, in seconds, of a 429. */
    val retryAfter: Int? = null,
    cause: Throwable? = null
) : Exception(listOfNotNull(status?.let { "HTTP $it" } ?: "no answer", code, field?.let { "field $it" }, detail).joinToString(": "), cause) {
    /** What to do about it. */
    val reaction: ApiReaction
        get() {
            val answered = status ?: return ApiReaction.toNoAnswer()
            return ApiReaction.to(answered, this.field, retryAfter)
        }

    companion object {
        /**
         * The API's error body, `{"error": {"code", "field", "message"}}`, or the status alone when a proxy answered;
         * `Retry-After` as whole seconds (an HTTP date is not read: the 429's default of 60 s applies).
         */
        @JvmStatic
        fun fromAnswer(status: Int, body: String?, retryAfter: String?): PaperboyApiException {
            val retry = retryAfter?.trim()?.toIntOrNull()
            val error = try {
                ((body?.let { Json.parse(it) } as? Map<*, *>)?.get("error")) as? Map<*, *>
            } catch (parse: JsonException) {
                null
            }
            val code = error?.get("code") as? String
            val message = error?.get("message") as? String
            if (error == null || code == null || message == null) {
                return PaperboyApiException(status, detail = "HTTP $status without Paperboy's error body", retryAfter = retry)
            }
            return PaperboyApiException(status, code, error["field"] as? String, message, retry)
        }
    }
}
