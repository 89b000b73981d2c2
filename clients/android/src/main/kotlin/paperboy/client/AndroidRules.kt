package paperboy.client

/**
 * What the device's state means for the registration and the receipt, kept here as plain functions so that they are
 * tested on the JVM and the glue only reads the system. (The glue's guards of an API's level stay in the glue, as
 * `Build.VERSION.SDK_INT >= Build.VERSION_CODES.X`: Android lint must see them, or its NewApi check fails the app's build.)
 */
object AndroidRules {
    /** Android 13 (API 33) shows no notification, the alert last resort included, without `POST_NOTIFICATIONS`. */
    @JvmStatic
    fun mustAskForNotifications(sdkInt: Int, granted: Boolean): Boolean = sdkInt >= 33 && !granted

    /** `ActivityManager.isBackgroundRestricted` exists from Android 9 (API 28); before, nothing is known. */
    @JvmStatic
    fun backgroundRefresh(sdkInt: Int, backgroundRestricted: Boolean?): Boolean? =
        if (sdkInt >= 28 && backgroundRestricted != null) !backgroundRestricted else null

    /**
     * The receipt's `network` from the active network's transports: Wi-Fi (or Ethernet, unmetered alike) before
     * cellular; no active network is `none`; another transport (a VPN alone, Bluetooth) is not known (null).
     */
    @JvmStatic
    fun network(active: Boolean, wifi: Boolean, ethernet: Boolean, cellular: Boolean): Network? = when {
        !active -> Network.NONE
        wifi || ethernet -> Network.WIFI
        cellular -> Network.CELLULAR
        else -> null
    }
}
