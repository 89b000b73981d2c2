package paperboy.client.android

import android.content.Context
import android.content.pm.ServiceInfo
import android.os.Build
import android.util.Log
import androidx.core.app.NotificationCompat
import androidx.work.BackoffPolicy
import androidx.work.Constraints
import androidx.work.CoroutineWorker
import androidx.work.Data
import androidx.work.ExistingWorkPolicy
import androidx.work.ForegroundInfo
import androidx.work.NetworkType
import androidx.work.OneTimeWorkRequest
import androidx.work.OutOfQuotaPolicy
import androidx.work.WorkManager
import androidx.work.WorkerParameters
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.withContext
import paperboy.client.EditionWork
import paperboy.client.WakeUpException
import java.time.Instant
import java.util.concurrent.TimeUnit

/** Downloads an edition (the library's [paperboy.client.EditionJob]) when WorkManager runs it, with a network. */
class EditionWorker(context: Context, params: WorkerParameters) : CoroutineWorker(context, params) {
    override suspend fun doWork(): Result {
        val queued = try {
            EditionWork.queued(inputData.keyValueMap)
        } catch (error: WakeUpException) {
            Log.w(TAG, "edition work without its push: ${error.message}")
            return Result.failure()
        }
        val start = Instant.now()
        var foreground = false
        // snippet: android-foreground
        if (EditionWork.mayStartForeground(queued, start)) {
            foreground = try {
                setForeground(foregroundInfo())
                true
            } catch (refused: IllegalStateException) {
                // Android 12+: ForegroundServiceStartNotAllowedException (an IllegalStateException, API 31) when the
                // high-priority exemption is over or was not granted; the work goes on in the background.
                if (Build.VERSION.SDK_INT >= Build.VERSION_CODES.S) Log.i(TAG, "no foreground service: ${refused.message}")
                false
            }
        }
        // end snippet: android-foreground
        val until = EditionWork.workUntil(queued.wakeUp, start, foreground)
        val outcome = withContext(Dispatchers.IO) {
            Paperboy.job(applicationContext).run(queued.wakeUp, queued.arrivedAt, until, DeviceFacts.context(applicationContext))
        }
        Log.i(TAG, "edition ${queued.wakeUp.editionId}: $outcome")
        return when (EditionWork.verdict(outcome, runAttemptCount)) {
            EditionWork.Verdict.SUCCESS -> Result.success()
            EditionWork.Verdict.RETRY -> Result.retry()
            EditionWork.Verdict.FAILURE -> Result.failure()
        }
    }

    /** Expedited work on Android 11 and older runs as a foreground service and asks for this. */
    override suspend fun getForegroundInfo(): ForegroundInfo = foregroundInfo()

    private fun foregroundInfo(): ForegroundInfo {
        val notification = NotificationCompat.Builder(applicationContext, Paperboy.DOWNLOAD_CHANNEL)
            .setSmallIcon(Paperboy.config.notificationIcon)
            .setContentTitle("Downloading the edition")
            .setOngoing(true)
            .setSilent(true)
            .setPriority(NotificationCompat.PRIORITY_LOW)
            .build()
        return if (Build.VERSION.SDK_INT >= Build.VERSION_CODES.Q) {
            ForegroundInfo(NOTIFICATION_ID, notification, ServiceInfo.FOREGROUND_SERVICE_TYPE_DATA_SYNC)
        } else {
            ForegroundInfo(NOTIFICATION_ID, notification)
        }
    }

    companion object {
        private const val TAG = "Paperboy"
        private const val NOTIFICATION_ID = 0x7062

        // snippet: android-enqueue
        /** Unique work per edition (`KEEP`: a later wave while it is queued or running starts nothing new). */
        fun enqueue(context: Context, decision: EditionWork.OnMessage.Enqueue) {
            val request = OneTimeWorkRequest.Builder(EditionWorker::class.java)
                .setConstraints(Constraints.Builder().setRequiredNetworkType(NetworkType.CONNECTED).build())
                .setInputData(Data.Builder().putAll(decision.inputData).build())
                .setBackoffCriteria(BackoffPolicy.EXPONENTIAL, 30, TimeUnit.SECONDS)
            if (decision.expedited) request.setExpedited(OutOfQuotaPolicy.RUN_AS_NON_EXPEDITED_WORK_REQUEST)
            WorkManager.getInstance(context).enqueueUniqueWork(decision.uniqueName, ExistingWorkPolicy.KEEP, request.build())
        }
        // end snippet: android-enqueue
    }
}
