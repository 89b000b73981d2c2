package paperboy.client

/**
 * The Android facts the glue acts on, by API level, and what the device's state means for a receipt: kept here, as
 * plain functions, so that they are tested on the JVM and the glue only reads the system.
 */
object AndroidRules {
    /** Notification channels exist from Android 8 (API 26): the alert last resort's and the download's. */
    @JvmStatic
    fun needsNotificationChannels(sdkInt: Int): Boolean = sdkInt >= 26

    /** Android 13 (API 33) shows no notification, the alert last resort included, without `POST_NOTIFICATIONS`. */
    @JvmStatic
    fun mustAskForNotifications(sdkInt: Int, granted: Boolean): Boolean = sdkInt >= 33 && !granted

    /** `ForegroundInfo` takes a service type from Android 10 (API 29); Android 14 requires it (`dataSync`). */
    @JvmStatic
    fun foregroundInfoTakesType(sdkInt: Int): Boolean = sdkInt >= 29

    /** From Android 12 (API 31) a foreground service started from the background may be refused. */
    @JvmStatic
    fun foregroundStartMayBeRefused(sdkInt: Int): Boolean = sdkInt >= 31

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
