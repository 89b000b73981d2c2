package paperboy.client

import java.io.File
import java.io.IOException
import java.time.Duration
import java.time.Instant

/**
 * One run of an edition's download, as the worker does it: the deadline, the edition already on the device, the
 * manifest, the plan for the device's tier (falling back), each bundle downloaded (resumed), checked and placed, and
 * the receipt through the outbox. Blocking; every I/O given (the API, the downloader, the courier, the clock), so
 * that it runs in tests against a local server.
 *
 * Files: `<directory>/<edition id>/<n>.bundle` for each checked bundle, `<n>.part` while downloading, `complete` when
 * every bundle is in place (what "the edition is on the device" means).
 */
class EditionJob @JvmOverloads constructor(
    private val api: PaperboyApiClient,
    private val courier: ReceiptCourier,
    private val directory: File,
    private val downloader: BundleDownloader = BundleDownloader(),
    private val now: () -> Instant = { Instant.now() }
) {
    /** How a run ended. */
    sealed class Outcome {
        /** The deadline passed: nothing downloaded or posted. */
        object Expired : Outcome() {
            override fun toString() = "Expired"
        }

        /** The edition was on the device already: `noData` posted. */
        object AlreadyHeld : Outcome() {
            override fun toString() = "AlreadyHeld"
        }

        /** Downloaded and checked: `newData` posted. */
        data class Downloaded(val plan: DownloadPlan, val bytesThisRun: Long) : Outcome()

        /** The run's time ran out before the edition did: nothing posted; run again (the partial files resume). */
        data class Unfinished(val bundlesPlaced: Int) : Outcome()

        /** The download cannot finish: `failed` posted (the next wave tries again). [retry]: worth another run soon. */
        data class Failed(val reason: String, val retry: Boolean) : Outcome()
    }

    /**
     * Runs the download for [wakeUp] until [until] (see [EditionWork.workUntil]).
     * @param context what the app knows of the device now (for the receipt).
     */
    fun run(wakeUp: EditionWakeUp, arrival: Instant, until: Instant, context: DeviceContext = DeviceContext()): Outcome {
        val start = now()
        if (wakeUp.isExpired(start)) return Outcome.Expired
        val folder = File(directory, wakeUp.editionId)
        if (File(folder, COMPLETE).isFile) {
            post(ReceiptReport.forWakeUp(wakeUp, arrival, start, ReceiptResult.NO_DATA, context = context))
            return Outcome.AlreadyHeld
        }
        val startNanos = System.nanoTime()
        var bytes = 0L
        fun fail(reason: String, retry: Boolean): Outcome {
            val seconds = (System.nanoTime() - startNanos) / 1e9
            if (!wakeUp.isExpired(now())) {
                post(ReceiptReport.forWakeUp(wakeUp, arrival, now(), ReceiptResult.FAILED, bytes, seconds, context))
            }
            return Outcome.Failed(reason, retry)
        }
        val manifest = try {
            api.manifest(wakeUp.manifestPath)
        } catch (error: PaperboyApiException) {
            val reaction = error.reaction
            return fail("the manifest: ${error.message}", reaction == ApiReaction.RetryLater || reaction is ApiReaction.RetryAfter)
        }
        val plan = manifest.plan(wakeUp.tier) ?: return fail("the edition has no bundles", false)
        for ((index, bundle) in plan.bundles.withIndex()) {
            val target = File(folder, "$index.bundle")
            if (target.isFile && target.length() == bundle.bytes) continue
            val current = now()
            if (wakeUp.isExpired(current)) return Outcome.Expired
            if (!current.isBefore(until)) return Outcome.Unfinished(index)
            val part = File(folder, "$index.part")
            val deadlineNanos = System.nanoTime() + Duration.between(current, until).toNanos()
            val progress = try {
                downloader.download(bundle, part, deadlineNanos)
            } catch (error: IOException) {
                val later = now()
                if (wakeUp.isExpired(later)) return Outcome.Expired
                if (!later.isBefore(until)) return Outcome.Unfinished(index)
                return fail("bundle $index: ${error.message}", true)
            }
            bytes += progress.bytesThisRun
            if (!progress.complete) return fail("bundle $index ended short", true)
            val verdict = try {
                BundleCheck.place(part, bundle, target)
            } catch (error: IOException) {
                return fail("bundle $index could not be stored: ${error.message}", false)
            }
            if (!verdict.isVerified) return fail("bundle $index is not the published one: $verdict", true)
        }
        File(folder, COMPLETE).createNewFile()
        val seconds = (System.nanoTime() - startNanos) / 1e9
        post(ReceiptReport.forWakeUp(wakeUp, arrival, now(), ReceiptResult.NEW_DATA, bytes, seconds, context))
        return Outcome.Downloaded(plan, bytes)
    }

    /** Whether the edition is on the device (every bundle checked and in place). */
    fun isHeld(editionId: String): Boolean = File(File(directory, editionId), COMPLETE).isFile

    // A receipt the outbox file cannot take is lost, but the edition is not: the next wave's run posts `noData`.
    private fun post(receipt: ReceiptReport) {
        try {
            courier.post(receipt)
        } catch (error: IOException) {
        }
    }

    companion object {
        const val COMPLETE = "complete"
    }
}
