package paperboy.client.android

import android.app.NotificationChannel
import android.app.NotificationManager
import android.content.Context
import android.content.Intent
import android.os.Build
import android.util.Log
import androidx.lifecycle.ProcessLifecycleOwner
import com.google.firebase.messaging.FirebaseMessaging
import paperboy.client.EditionJob
import paperboy.client.EditionWork
import paperboy.client.ImageTier
import paperboy.client.PaperboyApiClient
import paperboy.client.ReceiptCourier
import paperboy.client.ReceiptOutboxFile
import java.io.File
import java.time.Instant

/**
 * The app's one entry point to Paperboy on Android: call [start] from `Application.onCreate`. Thin: every decision
 * is the library's (`paperboy.client`); this only reads the system and hands over.
 */
object Paperboy {
    /** What the app gives: where Paperboy is, its device key, and the reader's settings (read when registering). */
    class Configuration(
        val baseUrl: String,
        val apiKey: String,
        /** The notification's small icon (a drawable of the app) for the download's foreground notification. */
        val notificationIcon: Int,
        val subscriptions: () -> List<String>,
        val tier: () -> ImageTier,
        val autoDownload: () -> Boolean,
        val appVersion: String?,
        /**
         * The reader asked for alerts about new editions (the settings screen where `POST_NOTIFICATIONS` is asked
         * for): only then does the alert last resort reach the device. False: no edition alert, whatever else the
         * reader allowed notifications for.
         */
        val editionAlerts: () -> Boolean = { false }
    )

    const val ALERT_CHANNEL = "paperboy-editions"
    const val DOWNLOAD_CHANNEL = "paperboy-downloads"
    private const val TAG = "Paperboy"

    @Volatile
    private var configuration: Configuration? = null

    val config: Configuration
        get() = configuration ?: throw IllegalStateException("Paperboy.start was not called in Application.onCreate")

    val api: PaperboyApiClient by lazy { PaperboyApiClient(config.baseUrl, config.apiKey) }

    /** The outbox file and the token registered last, in the app's no-backup directory (a restored token is dead). */
    fun outboxFile(context: Context) = ReceiptOutboxFile(File(context.noBackupFilesDir, "paperboy-receipts.json")) { aside, error ->
        Log.w(TAG, "the receipt outbox could not be read: moved to $aside, starting empty", error)
    }

    fun courier(context: Context) = ReceiptCourier(api, outboxFile(context))

    fun job(context: Context) = EditionJob(api, courier(context), File(context.noBackupFilesDir, "paperboy-editions"))

    // snippet: android-start
    /**
     * At every launch: the notification channels, the open reports, the periodic outbox flush, and the token, which
     * is registered (every launch: it revives a device Paperboy stopped following, and it is cheap).
     */
    fun start(context: Context, configuration: Configuration) {
        this.configuration = configuration
        createChannels(context)
        ProcessLifecycleOwner.get().lifecycle.addObserver(OpenReporter(context.applicationContext))
        OutboxWorker.schedule(context)
        FirebaseMessaging.getInstance().token.addOnCompleteListener { task ->
            if (task.isSuccessful) {
                val token: String? = task.result
                if (token != null) RegistrationWorker.enqueue(context, token)
            } else {
                Log.w(TAG, "no FCM token yet; onNewToken will register it", task.exception)
            }
        }
    }

    /**
     * The alert last resort's channel (FCM shows the notification in it: name it in the manifest's
     * `com.google.firebase.messaging.default_notification_channel_id`), and the download's, quiet.
     */
    fun createChannels(context: Context) {
        if (Build.VERSION.SDK_INT < Build.VERSION_CODES.O) return
        val manager = context.getSystemService(NotificationManager::class.java) ?: return
        val alerts = NotificationChannel(ALERT_CHANNEL, "New editions", NotificationManager.IMPORTANCE_DEFAULT)
        alerts.setDescription("When an edition is out and could not be downloaded in the background")
        manager.createNotificationChannel(alerts)
        val downloads = NotificationChannel(DOWNLOAD_CHANNEL, "Edition downloads", NotificationManager.IMPORTANCE_LOW)
        downloads.setDescription("Shown while an edition downloads")
        manager.createNotificationChannel(downloads)
    }
    // end snippet: android-start

    /**
     * From the launcher activity's `onCreate`: when the reader tapped the alert last resort that Android showed while
     * the app was in the background, the intent's extras are the message's data; download the edition now.
     */
    fun onLaunchIntent(context: Context, intent: Intent?) {
        val extras = intent?.extras ?: return
        val data = HashMap<String, String>()
        for (key in extras.keySet()) extras.getString(key)?.let { data[key] = it }
        val decision = EditionWork.onNotificationTap(data, Instant.now())
        if (decision is EditionWork.OnMessage.Enqueue) EditionWorker.enqueue(context, decision)
    }
}
