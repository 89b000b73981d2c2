package paperboy.client

/**
 * The body of `PUT /v1/devices/{token}`, built from typed values so that it cannot be refused for its shape: the
 * route fixes `provider`, `platform` and `environment` together (an FCM device names its platform and no
 * environment; an APNs device its environment), and every required field is a parameter. As
 * `DeviceRegistration` in the Swift client.
 */
data class DeviceRegistration @JvmOverloads constructor(
    val route: Route,
    /** Publication ids of the app (`morning`, `evening`), up to 32. */
    val subscriptions: List<String>,
    /** The device's IANA zone (`ZoneId.systemDefault().id`). */
    val timeZone: String,
    val tier: ImageTier,
    /** False when the reader turned automatic downloads off: no broadcast wakes the device. */
    val autoDownload: Boolean = true,
    /** Whether the system shows this app's notifications (`NotificationManagerCompat.areNotificationsEnabled()`). */
    val alertsAuthorized: Boolean,
    /** The reader asked to be told when the edition is ready (iOS only, with a Notification Service Extension). */
    val notifyWhenReady: Boolean = false,
    /**
     * The reader asked for alerts about new editions (the app's setting that `POST_NOTIFICATIONS` is asked for):
     * only then, with notifications enabled, does the alert last resort reach the device. A reader who allowed
     * notifications for something else gets no edition alert.
     */
    val editionAlerts: Boolean = false,
    val appVersion: String? = null,
    val osVersion: String? = null,
    /** As the system says it (`Build.MODEL`, `Pixel 8`): wake rates are grouped by it. */
    val model: String? = null,
    val locale: String? = null
) {
    /** How Paperboy reaches the device. */
    sealed class Route {
        /** FCM, to an Android device (or an iOS app registered through Firebase). FCM has no sandbox. */
        data class Fcm(val platform: Platform) : Route()

        /** APNs, in the environment the iOS build's token belongs to. */
        data class Apns(val environment: Environment) : Route()
    }

    enum class Platform(val wire: String) { ANDROID("android"), IOS("ios") }

    enum class Environment(val wire: String) { PRODUCTION("production"), SANDBOX("sandbox") }

    /** The JSON object, in the order the Swift client writes it; optional strings cut to the API's limits. */
    fun toJsonObject(): Map<String, Any?> {
        val body = LinkedHashMap<String, Any?>()
        when (route) {
            is Route.Apns -> {
                body["provider"] = "apns"
                body["platform"] = "ios"
                body["environment"] = route.environment.wire
            }
            is Route.Fcm -> {
                body["provider"] = "fcm"
                body["platform"] = route.platform.wire
            }
        }
        body["subscriptions"] = subscriptions
        body["timeZone"] = timeZone
        body["tier"] = tier.wire
        body["autoDownload"] = autoDownload
        body["alertsAuthorized"] = alertsAuthorized
        body["notifyWhenReady"] = notifyWhenReady
        body["editionAlerts"] = editionAlerts
        // The API's limits, in code points as the API counts them: a long value from the system is cut rather
        // than refusing the registration.
        cut(appVersion, 64)?.let { body["appVersion"] = it }
        cut(osVersion, 64)?.let { body["osVersion"] = it }
        cut(model, 64)?.let { body["model"] = it }
        cut(locale, 35)?.let { body["locale"] = it }
        return body
    }

    fun toJson(): String = Json.write(toJsonObject())

    companion object {
        /** The first [limit] code points of [text] (never half a surrogate pair). */
        internal fun cut(text: String?, limit: Int): String? {
            if (text == null) return null
            if (text.codePointCount(0, text.length) <= limit) return text
            return text.substring(0, text.offsetByCodePoints(0, limit))
        }
    }
}

/** The device as Paperboy stored it (`GET /v1/devices/{token}`, and the registration's answer). */
data class RegisteredDevice(
    val token: String,
    val provider: String,
    val platform: String,
    val environment: String,
    val subscriptions: List<String>,
    val tier: ImageTier,
    /** Whether broadcasts send to it. */
    val active: Boolean
) {
    companion object {
        @Throws(JsonException::class)
        internal fun parse(json: String): RegisteredDevice {
            @Suppress("UNCHECKED_CAST")
            val root = Json.parse(json) as? Map<String, Any?> ?: throw JsonException("the device is not an object")
            val refuse: (String, String) -> Nothing = { field, problem -> throw JsonException("the device's $field $problem") }
            val fields = JsonFields(root, "")
            val subscriptions = fields.list("subscriptions", refuse).map { it as? String ?: refuse("subscriptions", "holds a non-string") }
            val tier = ImageTier.of(fields.string("tier", refuse)) ?: refuse("tier", "is unknown")
            val active = root["active"] as? Boolean ?: refuse("active", "is not a boolean")
            return RegisteredDevice(
                fields.string("token", refuse), fields.string("provider", refuse), fields.string("platform", refuse),
                fields.string("environment", refuse), subscriptions, tier, active
            )
        }
    }
}
