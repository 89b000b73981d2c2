package paperboy.client.android

import android.content.Context
import android.util.Log
import androidx.work.BackoffPolicy
import androidx.work.Constraints
import androidx.work.CoroutineWorker
import androidx.work.Data
import androidx.work.ExistingWorkPolicy
import androidx.work.NetworkType
import androidx.work.OneTimeWorkRequest
import androidx.work.WorkManager
import androidx.work.WorkerParameters
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.withContext
import paperboy.client.EditionWork
import paperboy.client.PaperboyApiException
import paperboy.client.PushToken
import java.util.concurrent.TimeUnit

/** `PUT /v1/devices/{token}` with the full registration body, then the courier learns the token (waiting receipts go). */
class RegistrationWorker(context: Context, params: WorkerParameters) : CoroutineWorker(context, params) {
    override suspend fun doWork(): Result = withContext(Dispatchers.IO) {
        val text = inputData.getString(TOKEN) ?: return@withContext Result.failure()
        val token = PushToken.Fcm(text)
        val verdict = try {
            Paperboy.api.register(token, DeviceFacts.registration(applicationContext))
            val previous = Paperboy.outboxFile(applicationContext).read().token
            Paperboy.courier(applicationContext).registered(token)
            EditionWork.previousTokenToRemove(previous, token)?.let { old ->
                try {
                    Paperboy.api.remove(old)
                } catch (error: PaperboyApiException) {
                    Log.i(TAG, "the previous token stays registered until FCM declares it dead: ${error.message}")
                }
            }
            EditionWork.Verdict.SUCCESS
        } catch (error: PaperboyApiException) {
            Log.w(TAG, "registration: ${error.message}")
            EditionWork.registrationVerdict(error.reaction)
        }
        when (verdict) {
            EditionWork.Verdict.SUCCESS -> Result.success()
            EditionWork.Verdict.RETRY -> Result.retry()
            EditionWork.Verdict.FAILURE -> Result.failure()
        }
    }

    companion object {
        private const val TAG = "Paperboy"
        private const val TOKEN = "token"

        /** One registration at a time (`REPLACE`: the newest token and settings win). */
        fun enqueue(context: Context, token: String) {
            val request = OneTimeWorkRequest.Builder(RegistrationWorker::class.java)
                .setConstraints(Constraints.Builder().setRequiredNetworkType(NetworkType.CONNECTED).build())
                .setInputData(Data.Builder().putString(TOKEN, token).build())
                .setBackoffCriteria(BackoffPolicy.EXPONENTIAL, 30, TimeUnit.SECONDS)
                .build()
            WorkManager.getInstance(context).enqueueUniqueWork("paperboy-registration", ExistingWorkPolicy.REPLACE, request)
        }
    }
}
