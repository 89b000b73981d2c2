package paperboy.client.android

import android.util.Log
import com.google.firebase.messaging.FirebaseMessagingService
import com.google.firebase.messaging.RemoteMessage
import paperboy.client.EditionWork
import java.time.Instant

/**
 * Receives Paperboy's FCM messages (declared in the manifest with `com.google.firebase.MESSAGING_EVENT`). It has
 * seconds: it decodes and enqueues, and the worker downloads.
 */
// snippet: android-messaging-service
class PaperboyMessagingService : FirebaseMessagingService() {
    override fun onMessageReceived(message: RemoteMessage) {
        val decision = EditionWork.onMessage(
            message.data,
            highPriority = message.priority == RemoteMessage.PRIORITY_HIGH,
            isAlert = message.notification != null,
            arrivedAt = Instant.now()
        )
        when (decision) {
            is EditionWork.OnMessage.Enqueue -> EditionWorker.enqueue(this, decision)
            is EditionWork.OnMessage.Malformed -> Log.w(TAG, "an edition push that cannot be read: ${decision.error.message}")
            is EditionWork.OnMessage.Expired -> Log.i(TAG, "edition ${decision.wakeUp.editionId} arrived after its deadline")
            EditionWork.OnMessage.NotOurs -> Unit
        }
    }

    /** A new token (first start, restore, token rotation): register it with the full body, not the token alone. */
    override fun onNewToken(token: String) {
        RegistrationWorker.enqueue(applicationContext, token)
    }

    private companion object {
        const val TAG = "Paperboy"
    }
}
// end snippet: android-messaging-service
