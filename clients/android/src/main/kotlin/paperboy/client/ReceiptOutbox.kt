package paperboy.client

import java.math.BigDecimal
import java.time.Duration
import java.time.Instant

/**
 * The receipts a device still has to deliver, and when to try: pure rules, no I/O, every instant and every jitter
 * given by the caller. [ReceiptCourier] keeps one in a file ([ReceiptOutboxFile]) and sends what [due] answers.
 * The same rules as `ReceiptOutbox` in the Swift client (docs/app-integration.md, "The receipt outbox"):
 *
 * 1. One receipt per edition. A success (`newData`, `noData`) replaces a `failed` one not yet sent; a `failed` one
 *    never replaces a success; a repeat keeps the first (Paperboy keeps the first it stores too).
 * 2. Oldest first, one at a time; a receipt stored (200 or 201) leaves the outbox.
 * 3. 429: nothing is sent before `Retry-After` plus 1 to 2 seconds of jitter (the limit is the network address's,
 *    so it holds for every receipt).
 * 4. 5xx, 409, no answer: nothing is sent for a growing delay, 30 s doubling to at most an hour, each stretched by
 *    up to half again at random, so that a fleet coming back does not retry in step.
 * 5. 404 naming `token`: the device is not registered; everything waits for the next successful registration
 *    ([registered]), then goes at once, under the token registered.
 * 6. 401: nothing more until the app runs with another key (kept in memory only: a new app version starts clean).
 * 7. Any other 4xx (a 400, 413, or 404 naming the edition): the receipt is dropped; sending it again cannot help.
 * 8. A receipt older than 7 days (Paperboy's default retention) is dropped; at most 64 are kept, the oldest first.
 * 9. On foregrounding ([dueOnForeground]) the failure backoff of rule 4 is lifted: the reader is here, and a receipt
 *    held for up to an hour would make an edition that is on the phone count as missing at this open. A 429's pause,
 *    a 401 and an awaited registration still hold.
 * 10. The open report goes after the drain, and only when no success receipt of the last day still waits
 *    ([openReportWaiting]): one that waits would count its edition as missing at this open. The report is then
 *    dropped, never sent later (its time is what Paperboy learns).
 */
class ReceiptOutbox {
    /** A receipt and when the app handed it over. */
    data class Entry(val receipt: ReceiptReport, val madeAt: Instant)

    /** What became of a receipt handed to [record]. */
    enum class Verdict { DELIVERED, KEPT, DROPPED }

    /** An answer of the API to a receipt: the status, the error's field and `Retry-After` in seconds. */
    data class Answer @JvmOverloads constructor(val status: Int, val field: String? = null, val retryAfter: Int? = null)

    private val list = ArrayList<Entry>()

    /** The receipts kept, oldest first. */
    val entries: List<Entry> get() = ArrayList(list)

    /** Nothing is sent before it (429, 5xx, 409, no answer). */
    var pausedUntil: Instant? = null
        private set

    /** Failures in a row (5xx, 409, no answer), for the next delay. */
    var failures: Int = 0
        private set

    /** A 404 naming `token` was answered: waiting for a registration. */
    var awaitingRegistration: Boolean = false
        private set

    /** A 401 was answered (not persisted: see rule 6). */
    var unauthorized: Boolean = false

    /** Nothing is sent before it, on foregrounding too: a 429's `Retry-After` (rule 3). */
    var rateLimitedUntil: Instant? = null
        private set

    /**
     * Adds a receipt (rule 1).
     * @return false when the outbox holds a receipt for the edition that this one does not replace.
     */
    fun add(receipt: ReceiptReport, now: Instant): Boolean {
        val index = list.indexOfFirst { it.receipt.editionId == receipt.editionId }
        if (index >= 0) {
            if (list[index].receipt.result.isSuccess || !receipt.result.isSuccess) return false
            list[index] = Entry(receipt, now)
            return true
        }
        list.add(Entry(receipt, now))
        while (list.size > CAPACITY) list.removeAt(0)
        return true
    }

    /**
     * The receipts to send now, oldest first: none while paused, unauthorized or awaiting a registration. Drops
     * those older than [MAXIMUM_AGE] (rule 8), whatever else holds.
     */
    fun due(now: Instant): List<ReceiptReport> = dueUnless(pausedUntil, now)

    /** The receipts to send on foregrounding, oldest first (rule 9): as [due], the failure backoff lifted. */
    fun dueOnForeground(now: Instant): List<ReceiptReport> = dueUnless(rateLimitedUntil, now)

    /** The receipts to send, oldest first, unless paused until [until]; drops the too old ones first. */
    private fun dueUnless(until: Instant?, now: Instant): List<ReceiptReport> {
        list.removeAll { Duration.between(it.madeAt, now) > MAXIMUM_AGE }
        if (unauthorized || awaitingRegistration) return emptyList()
        if (until != null && now.isBefore(until)) return emptyList()
        return list.map { it.receipt }
    }

    /**
     * The success receipts of the last day ([OPEN_REPORT_HORIZON]) still waiting once the outbox was drained: the
     * open report goes only when there are none (rule 10).
     */
    fun openReportWaiting(now: Instant): Int =
        list.count { it.receipt.result.isSuccess && Duration.between(it.madeAt, now) <= OPEN_REPORT_HORIZON }

    /**
     * Records the answer to sending [receipt]: a status with the error's field and `Retry-After`, or null for no
     * answer. [jitter] is a number in 0 until 1 (random in use, fixed in tests).
     */
    fun record(answer: Answer?, receipt: ReceiptReport, now: Instant, jitter: Double): Verdict {
        val reaction = if (answer == null) ApiReaction.toNoAnswer() else ApiReaction.to(answer.status, answer.field, answer.retryAfter)
        return when (reaction) {
            ApiReaction.Done -> {
                remove(receipt)
                failures = 0
                pausedUntil = null
                rateLimitedUntil = null
                Verdict.DELIVERED
            }
            ApiReaction.Drop -> {
                remove(receipt)
                Verdict.DROPPED
            }
            ApiReaction.RegisterThenRetry -> {
                awaitingRegistration = true
                Verdict.KEPT
            }
            ApiReaction.StopUntilNewKey -> {
                unauthorized = true
                Verdict.KEPT
            }
            is ApiReaction.RetryAfter -> {
                pausedUntil = plusSeconds(now, reaction.seconds + 1 + jitter)
                rateLimitedUntil = pausedUntil
                Verdict.KEPT
            }
            ApiReaction.RetryLater -> {
                val delay = Math.min(FIRST_BACKOFF_SECONDS * Math.pow(2.0, Math.min(failures, 16).toDouble()), LONGEST_BACKOFF_SECONDS)
                failures += 1
                pausedUntil = plusSeconds(now, delay * (1 + jitter / 2))
                Verdict.KEPT
            }
        }
    }

    /** The device registered (2xx): what waited for it goes now (rule 5). */
    fun registered() {
        awaitingRegistration = false
    }

    // Only the receipt sent: a success added meanwhile for a `failed` one being sent stays.
    private fun remove(receipt: ReceiptReport) {
        list.removeAll { it.receipt == receipt }
    }

    /** The persisted form (without [unauthorized]: rule 6). */
    fun toJsonObject(): Map<String, Any?> {
        val body = LinkedHashMap<String, Any?>()
        body["entries"] = list.map { mapOf("receipt" to it.receipt.toJsonObject(), "madeAt" to it.madeAt.toString()) }
        pausedUntil?.let { body["pausedUntil"] = it.toString() }
        rateLimitedUntil?.let { body["rateLimitedUntil"] = it.toString() }
        body["failures"] = failures
        body["awaitingRegistration"] = awaitingRegistration
        return body
    }

    override fun equals(other: Any?): Boolean = other is ReceiptOutbox && Json.equivalent(toJsonObject(), other.toJsonObject()) &&
        unauthorized == other.unauthorized

    override fun hashCode(): Int = list.size

    companion object {
        @JvmField
        val MAXIMUM_AGE: Duration = Duration.ofDays(7)
        const val CAPACITY = 64

        /** How far back a success receipt still bears on an open report (rule 10): a broadcast lasts within a day. */
        @JvmField
        val OPEN_REPORT_HORIZON: Duration = Duration.ofDays(1)
        internal const val FIRST_BACKOFF_SECONDS = 30.0
        internal const val LONGEST_BACKOFF_SECONDS = 3_600.0

        private fun plusSeconds(instant: Instant, seconds: Double): Instant =
            instant.plusNanos(Math.round(seconds * 1_000_000_000.0))

        /** An outbox as [toJsonObject] wrote it. */
        @JvmStatic
        @Throws(JsonException::class)
        fun fromJsonObject(body: Map<String, Any?>): ReceiptOutbox {
            val outbox = ReceiptOutbox()
            val refuse: (String, String) -> Nothing = { field, problem -> throw JsonException("the outbox's $field $problem") }
            val fields = JsonFields(body, "")
            for (item in fields.list("entries", refuse)) {
                @Suppress("UNCHECKED_CAST")
                val entry = item as? Map<String, Any?> ?: refuse("entries", "holds a non-object")
                val entryFields = JsonFields(entry, "entries")
                val madeAt = instant(entryFields.string("madeAt", refuse)) ?: refuse("entries.madeAt", "is not an instant")
                outbox.list.add(Entry(ReceiptReport.fromJsonObject(entryFields.obj("receipt", refuse)), madeAt))
            }
            outbox.pausedUntil = fields.optionalString("pausedUntil", refuse)?.let { instant(it) ?: refuse("pausedUntil", "is not an instant") }
            outbox.rateLimitedUntil = fields.optionalString("rateLimitedUntil", refuse)?.let { instant(it) ?: refuse("rateLimitedUntil", "is not an instant") }
            outbox.failures = (body["failures"] as? BigDecimal)?.toInt() ?: 0
            outbox.awaitingRegistration = body["awaitingRegistration"] as? Boolean ?: false
            return outbox
        }

        private fun instant(text: String): Instant? = try {
            Instant.parse(text)
        } catch (error: java.time.format.DateTimeParseException) {
            null
        }
    }
}
