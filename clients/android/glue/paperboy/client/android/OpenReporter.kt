package paperboy.client.android

import android.content.Context
import androidx.lifecycle.DefaultLifecycleObserver
import androidx.lifecycle.LifecycleOwner
import paperboy.client.PaperboyApiException
import java.io.IOException
import java.util.concurrent.Executors

/**
 * On every foreground (the process reaching `ON_START`, not launch alone: a push also launches the app): the open
 * report, fire and forget (never queued, never retried), and a flush of the receipt outbox.
 */
// snippet: android-open-reporter
class OpenReporter(private val context: Context) : DefaultLifecycleObserver {
    override fun onStart(owner: LifecycleOwner) {
        background.execute {
            val token = try {
                Paperboy.outboxFile(context).read().token
            } catch (error: IOException) {
                null
            } ?: return@execute
            try {
                Paperboy.api.reportOpen(token)
            } catch (error: PaperboyApiException) {
                // Dropped, whatever it was (OpenReport.retries is false): a late report would teach a wrong minute.
            }
            try {
                Paperboy.courier(context).flush()
            } catch (error: IOException) {
            }
        }
    }

    private companion object {
        val background = Executors.newSingleThreadExecutor()
    }
}
// end snippet: android-open-reporter
