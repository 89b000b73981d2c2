package paperboy.client

/**
 * The open report (docs/app-integration.md, section 12): `POST /v1/devices/{token}/opens` with no body, answered 204,
 * on every foreground (`ProcessLifecycleOwner` reaching `ON_START`), not at launch alone. Fire and forget: on any
 * error (even a 429 or a 5xx) it is dropped and never sent later, because the time Paperboy receives it is what it
 * learns from; a report queued while offline would teach a wrong minute. Never through the receipt outbox.
 */
object OpenReport {
    const val METHOD = "POST"

    /** The request has no body (not `{}`): the report is the request itself. */
    @JvmField
    val BODY: String? = null

    /** The answer when it was recorded. */
    const val EXPECTED_STATUS = 204

    @JvmStatic
    fun path(token: PushToken): String = "/v1/devices/${token.pathSegment}/opens"

    /**
     * Whether an open report should ever be sent again after this reaction: never. A 404 naming `token` means the
     * device is not registered: the next launch's registration fixes that, not a resend.
     */
    @JvmStatic
    fun retries(@Suppress("UNUSED_PARAMETER") reaction: ApiReaction): Boolean = false
}
