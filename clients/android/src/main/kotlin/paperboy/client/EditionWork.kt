package paperboy.client

import java.time.Duration
import java.time.Instant

/**
 * The decisions around an edition's push on Android, so that the `FirebaseMessagingService` and the WorkManager
 * worker stay thin: whether to enqueue, under which unique name, expedited or not, what the worker's input data
 * holds, whether the worker may start a foreground service, and how long it may run.
 */
object EditionWork {
    /** What `onMessageReceived` does with a message. */
    sealed class OnMessage {
        /** Not an edition's message (no `edition` key): leave it to the app's other handlers. */
        object NotOurs : OnMessage() {
            override fun toString() = "NotOurs"
        }

        /** An edition's message that cannot be used: log [error] (it names the key; a server or proxy bug). */
        data class Malformed(val error: WakeUpException) : OnMessage()

        /** Past the deadline already (a message held by Doze): nothing to download, nothing to post. */
        data class Expired(val wakeUp: EditionWakeUp) : OnMessage()

        /** Enqueue unique work [uniqueName] with [inputData], keeping work already queued for the edition. */
        data class Enqueue(val wakeUp: EditionWakeUp, val uniqueName: String, val expedited: Boolean, val inputData: Map<String, Any>) : OnMessage()
    }

    /** The input data's keys of the worker besides the message's own data (which are copied as they came). */
    const val ARRIVED_AT_KEY = "paperboy.arrivedAt"
    const val HIGH_PRIORITY_KEY = "paperboy.highPriority"
    const val ALERT_KEY = "paperboy.alert"

    /**
     * How long after a high-priority message the worker may still try `setForeground`: Android exempts the app from
     * the background start restriction for a short time after a high-priority FCM message (it does not say how
     * long), so only a worker that starts right away tries, and it catches the refusal anyway.
     */
    @JvmField
    val FOREGROUND_WINDOW: Duration = Duration.ofSeconds(10)

    /** A worker's run is stopped after 10 minutes unless it runs in the foreground: stop a little before. */
    @JvmField
    val BACKGROUND_BUDGET: Duration = Duration.ofMinutes(9)

    /**
     * The decision for a message's data.
     * @param highPriority whether it was delivered at high priority (`RemoteMessage.priority == PRIORITY_HIGH`; not
     * `originalPriority`: a high-priority message Android downgraded gets none of high priority's exemptions).
     * @param isAlert whether it had a `notification` (the alert last resort, handed over while the app was in front).
     */
    @JvmStatic
    fun onMessage(data: Map<String, String>, highPriority: Boolean, isAlert: Boolean, arrivedAt: Instant): OnMessage {
        // snippet: android-decode
        val wakeUp = try {
            EditionWakeUp.decode(data, isAlert) ?: return OnMessage.NotOurs
        } catch (error: WakeUpException) {
            return OnMessage.Malformed(error)
        }
        // end snippet: android-decode
        if (wakeUp.isExpired(arrivedAt)) return OnMessage.Expired(wakeUp)
        val input = LinkedHashMap<String, Any>(data)
        input[ARRIVED_AT_KEY] = arrivedAt.toEpochMilli()
        input[HIGH_PRIORITY_KEY] = highPriority
        input[ALERT_KEY] = isAlert
        return OnMessage.Enqueue(wakeUp, uniqueName(wakeUp.editionId), highPriority, input)
    }

    /**
     * The reader tapped the alert last resort that Android showed while the app was in the background: the
     * notification's intent carries the message's data as extras. Expedited (the reader is waiting), never a
     * foreground service (no high-priority exemption applies then).
     */
    @JvmStatic
    fun onNotificationTap(extras: Map<String, String>, now: Instant): OnMessage =
        when (val decision = onMessage(extras, highPriority = false, isAlert = true, arrivedAt = now)) {
            is OnMessage.Enqueue -> decision.copy(expedited = true)
            else -> decision
        }

    /** What a worker's run asks WorkManager for (`Result.success()`, `retry()`, `failure()`). */
    enum class Verdict { SUCCESS, RETRY, FAILURE }

    /** Runs of an edition's work that failed and may try again before the next wave does (3 in all). */
    const val ATTEMPTS = 3

    /**
     * After an edition's run: done when downloaded, held, or expired; again when its time ran out (the partial files
     * resume); again after a failure worth retrying while attempts remain (WorkManager's backoff spaces them), else
     * done: the `failed` receipt is posted and the next wave tries again.
     * @param runAttemptCount `ListenableWorker.runAttemptCount` (0 for the first run).
     */
    @JvmStatic
    fun verdict(outcome: EditionJob.Outcome, runAttemptCount: Int): Verdict = when (outcome) {
        is EditionJob.Outcome.Unfinished -> Verdict.RETRY
        is EditionJob.Outcome.Failed -> if (outcome.retry && runAttemptCount + 1 < ATTEMPTS) Verdict.RETRY else Verdict.SUCCESS
        else -> Verdict.SUCCESS
    }

    /**
     * After a registration's attempt (the token at launch, `onNewToken`): done on 2xx; again later on no answer,
     * 5xx, 429 (WorkManager's backoff, and the next launch registers anyway); given up on a refusal (a bug: log the
     * field) or a revoked key.
     */
    @JvmStatic
    fun registrationVerdict(reaction: ApiReaction): Verdict = when (reaction) {
        ApiReaction.Done -> Verdict.SUCCESS
        ApiReaction.RetryLater, ApiReaction.RegisterThenRetry, is ApiReaction.RetryAfter -> Verdict.RETRY
        ApiReaction.StopUntilNewKey, ApiReaction.Drop -> Verdict.FAILURE
    }

    /** The token to remove (`DELETE`) after registering [registered]: the one registered before it, if another. */
    @JvmStatic
    fun previousTokenToRemove(previous: PushToken?, registered: PushToken): PushToken? =
        if (previous != null && previous != registered) previous else null

    /** One unit of work per edition: a later wave while it is queued or running starts nothing new (`KEEP`). */
    @JvmStatic
    fun uniqueName(editionId: String): String = "paperboy-edition-$editionId"

    /** What the worker was enqueued with. */
    data class Queued(val wakeUp: EditionWakeUp, val arrivedAt: Instant, val highPriority: Boolean)

    /**
     * The worker's input data back (WorkManager's `Data.keyValueMap`).
     * @throws WakeUpException when the message's data is not there or not an edition's.
     */
    @JvmStatic
    @Throws(WakeUpException::class)
    fun queued(input: Map<String, Any?>): Queued {
        val data = LinkedHashMap<String, String>()
        for ((key, value) in input) if (value is String) data[key] = value
        val alert = input[ALERT_KEY] as? Boolean ?: false
        val wakeUp = EditionWakeUp.decode(data, alert) ?: throw WakeUpException("edition", "is missing")
        val arrived = (input[ARRIVED_AT_KEY] as? Long)?.let { Instant.ofEpochMilli(it) } ?: throw WakeUpException(ARRIVED_AT_KEY, "is missing")
        return Queued(wakeUp, arrived, input[HIGH_PRIORITY_KEY] as? Boolean ?: false)
    }

    /**
     * Whether the worker may try `setForeground` now: only right after a high-priority message (see
     * [FOREGROUND_WINDOW]); on Android 12 and later any other start from the background is refused with
     * `ForegroundServiceStartNotAllowedException` (which the worker catches all the same).
     */
    @JvmStatic
    fun mayStartForeground(queued: Queued, now: Instant): Boolean =
        queued.highPriority && !now.isBefore(queued.arrivedAt) && Duration.between(queued.arrivedAt, now) <= FOREGROUND_WINDOW

    /** Until when the worker downloads: the edition's deadline, or 9 minutes from [start] unless in the foreground. */
    @JvmStatic
    fun workUntil(wakeUp: EditionWakeUp, start: Instant, foreground: Boolean): Instant {
        if (foreground) return wakeUp.deadline
        val budget = start.plus(BACKGROUND_BUDGET)
        return if (budget.isBefore(wakeUp.deadline)) budget else wakeUp.deadline
    }
}
