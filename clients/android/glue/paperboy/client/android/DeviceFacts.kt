package paperboy.client.android

import android.app.ActivityManager
import android.content.Context
import android.net.ConnectivityManager
import android.net.NetworkCapabilities
import android.os.BatteryManager
import android.os.Build
import android.os.PowerManager
import androidx.core.app.NotificationManagerCompat
import paperboy.client.AndroidRules
import paperboy.client.DeviceContext
import paperboy.client.DeviceRegistration
import java.time.ZoneId
import java.util.Locale

/** What the system says, read for the library: the receipt's context and the registration's body. */
object DeviceFacts {
    fun context(context: Context): DeviceContext {
        val connectivity = context.getSystemService(ConnectivityManager::class.java)
        val capabilities = connectivity?.let { it.getNetworkCapabilities(it.activeNetwork) }
        val network = AndroidRules.network(
            active = capabilities != null,
            wifi = capabilities?.hasTransport(NetworkCapabilities.TRANSPORT_WIFI) == true,
            ethernet = capabilities?.hasTransport(NetworkCapabilities.TRANSPORT_ETHERNET) == true,
            cellular = capabilities?.hasTransport(NetworkCapabilities.TRANSPORT_CELLULAR) == true
        )
        val restricted = if (Build.VERSION.SDK_INT >= Build.VERSION_CODES.P) {
            context.getSystemService(ActivityManager::class.java)?.isBackgroundRestricted
        } else {
            null
        }
        return DeviceContext(
            network = network,
            charging = context.getSystemService(BatteryManager::class.java)?.isCharging,
            lowPowerMode = context.getSystemService(PowerManager::class.java)?.isPowerSaveMode,
            backgroundRefresh = AndroidRules.backgroundRefresh(Build.VERSION.SDK_INT, restricted)
        )
    }

    fun registration(context: Context): DeviceRegistration {
        val settings = Paperboy.config
        return DeviceRegistration(
            route = DeviceRegistration.Route.Fcm(DeviceRegistration.Platform.ANDROID),
            subscriptions = settings.subscriptions(),
            timeZone = ZoneId.systemDefault().id,
            tier = settings.tier(),
            autoDownload = settings.autoDownload(),
            alertsAuthorized = NotificationManagerCompat.from(context).areNotificationsEnabled(),
            editionAlerts = settings.editionAlerts(),
            appVersion = settings.appVersion,
            osVersion = Build.VERSION.RELEASE,
            model = Build.MODEL,
            locale = Locale.getDefault().toString()
        )
    }
}
