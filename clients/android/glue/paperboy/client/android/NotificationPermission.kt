package paperboy.client.android

import android.Manifest
import android.app.Activity
import android.content.Context
import android.content.pm.PackageManager
import android.os.Build
import androidx.core.app.ActivityCompat
import androidx.core.content.ContextCompat
import paperboy.client.AndroidRules

/**
 * Android 13's `POST_NOTIFICATIONS`: without it the alert last resort is never shown. Ask when the reader sees why
 * (e.g. on the settings screen that offers "tell me when the edition is out"), then register again: the
 * registration's `alertsAuthorized` follows the answer (and the Settings app: check it when the app comes back).
 */
// snippet: android-notification-permission
object NotificationPermission {
    fun mustAsk(context: Context): Boolean = AndroidRules.mustAskForNotifications(
        Build.VERSION.SDK_INT,
        ContextCompat.checkSelfPermission(context, Manifest.permission.POST_NOTIFICATIONS) == PackageManager.PERMISSION_GRANTED
    )

    /** Asks (the answer comes to the activity's `onRequestPermissionsResult` with [requestCode]). */
    fun ask(activity: Activity, requestCode: Int) {
        if (mustAsk(activity)) ActivityCompat.requestPermissions(activity, arrayOf(Manifest.permission.POST_NOTIFICATIONS), requestCode)
    }
}
// end snippet: android-notification-permission
