package paperboy.client.android

import android.content.Context
import androidx.lifecycle.DefaultLifecycleObserver
import androidx.lifecycle.LifecycleOwner
import java.util.concurrent.Executors

/**
 * On every foreground (the process reaching `ON_START`, not launch alone: a push also launches the app): the
 * library's ordered step, `ReceiptCourier.onForeground`: the receipt outbox drained first (its failure backoff
 * lifted), then the open report, fire and forget (never queued, never retried), dropped while a success receipt
 * still waits.
 */
// snippet: android-open-reporter
class OpenReporter(private val context: Context) : DefaultLifecycleObserver {
    override fun onStart(owner: LifecycleOwner) {
        background.execute {
            // The outbox first, then the open report: a receipt held back would count an edition there as missing.
            Paperboy.courier(context).onForeground { token -> Paperboy.api.reportOpen(token) }
        }
    }

    private companion object {
        val background = Executors.newSingleThreadExecutor()
    }
}
// end snippet: android-open-reporter
