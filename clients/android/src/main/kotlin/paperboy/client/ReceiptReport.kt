package paperboy.client

import java.math.BigDecimal
import java.time.Instant

/** What became of an edition on the device. */
enum class ReceiptResult(val wire: String) {
    /** Downloaded now: this device gets no more waves for the edition. */
    NEW_DATA("newData"),
    /** The device had it already (an earlier wave, or the reader opened the app): no more waves either. */
    NO_DATA("noData"),
    /** The download could not finish: the next wave tries again, and a later success replaces it. */
    FAILED("failed");

    /** Whether it stops the follow-up waves. */
    val isSuccess: Boolean get() = this != FAILED

    companion object {
        @JvmStatic
        fun of(wire: String): ReceiptResult? = values().firstOrNull { it.wire == wire }
    }
}

/** The network the device was on when the work ran (`ConnectivityManager`). */
enum class Network(val wire: String) {
    WIFI("wifi"), CELLULAR("cellular"), NONE("none");

    companion object {
        @JvmStatic
        fun of(wire: String): Network? = values().firstOrNull { it.wire == wire }
    }
}

/** What the app knew when the push ran; null where it did not. The glue reads it from Android's services. */
data class DeviceContext @JvmOverloads constructor(
    val network: Network? = null,
    /** `BatteryManager.isCharging`. */
    val charging: Boolean? = null,
    /** Battery saver: `PowerManager.isPowerSaveMode`. */
    val lowPowerMode: Boolean? = null,
    /** Background work allowed: `ActivityManager.isBackgroundRestricted` false. */
    val backgroundRefresh: Boolean? = null
)

/**
 * The body of `POST /v1/devices/{token}/receipts`: what became of an edition on this device and what the app knew
 * when the push ran. Values are clamped as the Swift client's `ReceiptReport` does: bytes and seconds never
 * negative, `secondsFromPush` within 0 to 86,400.
 */
class ReceiptReport @JvmOverloads constructor(
    val editionId: String,
    val result: ReceiptResult,
    bytes: Long = 0,
    seconds: Double = 0.0,
    val network: Network? = null,
    val charging: Boolean? = null,
    val lowPowerMode: Boolean? = null,
    val backgroundRefresh: Boolean? = null,
    /** The push's wave; null for a download the reader started (no push). */
    val wave: Int? = null,
    secondsFromPush: Double? = null
) {
    /** Bytes downloaded this time (0 for `noData`). */
    val bytes: Long = Math.max(0L, bytes)
    /** How long the download took (not the time since the push). */
    val seconds: Double = if (seconds.isNaN() || seconds.isInfinite()) 0.0 else Math.max(0.0, seconds)
    val secondsFromPush: Double? = secondsFromPush?.let { if (it.isNaN()) 0.0 else Math.min(Math.max(0.0, it), 86_400.0) }

    /** The JSON object, in the Swift client's order; absent context fields are left out (not `null`). */
    fun toJsonObject(): Map<String, Any?> {
        val body = LinkedHashMap<String, Any?>()
        body["editionId"] = editionId
        body["result"] = result.wire
        body["bytes"] = bytes
        body["seconds"] = seconds
        network?.let { body["network"] = it.wire }
        charging?.let { body["charging"] = it }
        lowPowerMode?.let { body["lowPowerMode"] = it }
        backgroundRefresh?.let { body["backgroundRefresh"] = it }
        wave?.let { body["wave"] = it }
        secondsFromPush?.let { body["secondsFromPush"] = it }
        return body
    }

    fun toJson(): String = Json.write(toJsonObject())

    override fun equals(other: Any?): Boolean = other is ReceiptReport && Json.equivalent(toJsonObject(), other.toJsonObject())

    override fun hashCode(): Int = editionId.hashCode() * 31 + result.hashCode()

    override fun toString(): String = "ReceiptReport(${toJson()})"

    companion object {
        /** The receipt for a push's edition at [now]: its wave, and `secondsFromPush` from the push. */
        @JvmStatic
        @JvmOverloads
        fun forWakeUp(
            wakeUp: EditionWakeUp,
            arrival: Instant,
            now: Instant,
            result: ReceiptResult,
            bytes: Long = 0,
            seconds: Double = 0.0,
            context: DeviceContext = DeviceContext()
        ): ReceiptReport = ReceiptReport(
            wakeUp.editionId, result, bytes, seconds, context.network, context.charging, context.lowPowerMode,
            context.backgroundRefresh, wakeUp.wave, wakeUp.secondsFromPush(arrival, now)
        )

        /** A receipt as [toJsonObject] wrote it (the outbox file). */
        @JvmStatic
        @Throws(JsonException::class)
        fun fromJsonObject(body: Map<String, Any?>): ReceiptReport {
            val refuse: (String, String) -> Nothing = { field, problem -> throw JsonException("the receipt's $field $problem") }
            val fields = JsonFields(body, "")
            val result = ReceiptResult.of(fields.string("result", refuse)) ?: refuse("result", "is unknown")
            return ReceiptReport(
                editionId = fields.string("editionId", refuse),
                result = result,
                bytes = if (fields.has("bytes")) fields.long("bytes", refuse) else 0,
                seconds = (body["seconds"] as? BigDecimal)?.toDouble() ?: 0.0,
                network = fields.optionalString("network", refuse)?.let { Network.of(it) ?: refuse("network", "is unknown") },
                charging = body["charging"] as? Boolean,
                lowPowerMode = body["lowPowerMode"] as? Boolean,
                backgroundRefresh = body["backgroundRefresh"] as? Boolean,
                wave = if (fields.has("wave")) fields.long("wave", refuse).toInt() else null,
                secondsFromPush = (body["secondsFromPush"] as? BigDecimal)?.toDouble()
            )
        }
    }
}

/** A receipt as Paperboy stored it (the answer to a receipt). */
data class StoredReceipt(val editionId: String, val result: ReceiptResult)
