package paperboy.client

import java.io.IOException
import java.time.Instant
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.locks.ReentrantLock

/** What the courier needs of the API: posting one receipt ([PaperboyApiClient] is one). */
interface ReceiptSender {
    /**
     * `POST /v1/devices/{token}/receipts`.
     * @return the receipt Paperboy holds, and whether this one was the first (201).
     * @throws PaperboyApiException for any other answer, or none.
     */
    @Throws(PaperboyApiException::class)
    fun postReceipt(receipt: ReceiptReport, token: PushToken): Pair<StoredReceipt, Boolean>
}

/**
 * Delivers receipts, as `ReceiptCourier` in the Swift client: keeps each in the outbox file until Paperboy has stored
 * it, and sends what the outbox's rules say is due. Hand it every receipt ([post]); tell it about every successful
 * registration ([registered]); call [flush] when the app comes to the foreground and from a periodic worker.
 *
 * Blocking: call it off the main thread. The file's lock is held only to read and write it, never while a request
 * is out. One flush at a time per outbox file in this process, whichever courier of it flushes (the glue makes one
 * per call): two at once would post the same receipt twice.
 */
class ReceiptCourier @JvmOverloads constructor(
    private val api: ReceiptSender,
    private val file: ReceiptOutboxFile,
    private val now: () -> Instant = { Instant.now() },
    private val jitter: () -> Double = { Math.random() }
) {
    /** What became of a receipt that was sent. */
    data class Delivery(val receipt: ReceiptReport, val verdict: ReceiptOutbox.Verdict, val error: PaperboyApiException?)

    /** A 401 in this process: nothing more is sent until the app runs with another key (rule 6). */
    @Volatile
    private var unauthorized = false
    private val sending: ReentrantLock = sendingLocks.getOrPut(file.file.absoluteFile.path) { ReentrantLock() }

    /**
     * After a successful registration (2xx) with [token]: receipts are posted under it from now on, and those that
     * waited for a registration are sent.
     */
    @Throws(IOException::class)
    fun registered(token: PushToken): List<Delivery> {
        file.update { contents ->
            contents.token = token
            contents.outbox.registered()
        }
        return flush()
    }

    /** Keeps [receipt] in the outbox (rule 1 decides whether it replaces one) and sends what is due. */
    @Throws(IOException::class)
    fun post(receipt: ReceiptReport): List<Delivery> {
        val at = now()
        file.update { it.outbox.add(receipt, at) }
        return flush()
    }

    /** Sends the due receipts, oldest first, until one is not delivered. */
    @Throws(IOException::class)
    fun flush(): List<Delivery> = flush(foreground = false)

    /** What became of a foregrounding: the receipts sent, and whether the open was reported. */
    data class Foregrounding(val deliveries: List<Delivery>, val openReported: Boolean)

    /**
     * When the app comes to the foreground (every `ON_START`), in one ordered step, as `ReceiptCourier.onForeground`
     * in the Swift client (docs/app-integration.md, section 12): drains the outbox, its failure backoff lifted
     * ([ReceiptOutbox.dueOnForeground]); then reports the open with [reportOpen] under the token registered last,
     * unless a success receipt still waits ([ReceiptOutbox.openReportWaiting]): Paperboy's "ready at open" counts
     * what its receipts say was on the phone when the report came. The report is fire and forget: an error drops it.
     */
    fun onForeground(reportOpen: (PushToken) -> Unit): Foregrounding {
        val deliveries = try {
            flush(foreground = true)
        } catch (error: IOException) {
            emptyList<Delivery>()
        }
        val at = now()
        val token = try {
            val contents = file.read()
            if (contents.outbox.openReportWaiting(at) > 0) null else contents.token
        } catch (error: IOException) {
            null
        } ?: return Foregrounding(deliveries, false)
        val reported = try {
            reportOpen(token)
            true
        } catch (error: PaperboyApiException) {
            false  // dropped, whatever it was (OpenReport.retries is false): a late report would teach a wrong minute
        }
        return Foregrounding(deliveries, reported)
    }

    private fun flush(foreground: Boolean): List<Delivery> {
        sending.lock()
        try {
            val deliveries = ArrayList<Delivery>()
            while (true) {
                val at = now()
                val blocked = unauthorized
                val next = file.update { contents ->
                    contents.outbox.unauthorized = blocked
                    val token = contents.token
                    val due = if (foreground) contents.outbox.dueOnForeground(at) else contents.outbox.due(at)
                    val receipt = due.firstOrNull()
                    if (token == null || receipt == null) null else Pair(receipt, token)
                } ?: return deliveries
                val (receipt, token) = next
                var answer: ReceiptOutbox.Answer?
                var failure: PaperboyApiException? = null
                try {
                    api.postReceipt(receipt, token)
                    answer = ReceiptOutbox.Answer(200)
                } catch (error: PaperboyApiException) {
                    failure = error
                    answer = error.status?.let { ReceiptOutbox.Answer(it, error.field, error.retryAfter) }
                }
                val recordedAt = now()
                val random = jitter()
                val verdict = file.update { it.outbox.record(answer, receipt, recordedAt, random) }
                if (failure?.reaction == ApiReaction.StopUntilNewKey) unauthorized = true
                deliveries.add(Delivery(receipt, verdict, failure))
                if (verdict == ReceiptOutbox.Verdict.KEPT) return deliveries
            }
        } finally {
            sending.unlock()
        }
    }

    /** The receipts not delivered yet, oldest first. */
    val pending: List<ReceiptReport>
        @Throws(IOException::class) get() = file.read().outbox.entries.map { it.receipt }

    private companion object {
        // Per outbox file (its absolute path), for every courier of it in this process.
        val sendingLocks = ConcurrentHashMap<String, ReentrantLock>()
    }
}
