package paperboy.client

import java.math.BigDecimal
import java.net.URI
import java.net.URISyntaxException
import java.time.Duration
import java.time.Instant

/**
 * An edition's push, decoded from FCM's data (`RemoteMessage.data`: string to string, so `fetch` is the JSON
 * text of a list, `wave` digits and `extension` JSON text), as `EditionWakeUp.decode(data:)` in the Swift client.
 *
 * ```kotlin
 * val wakeUp = EditionWakeUp.decode(message.data, isAlert = message.notification != null) ?: return  // not Paperboy's
 * ```
 */
data class EditionWakeUp(
    /** The edition's id, a lowercase UUID: the receipt's `editionId`. */
    val editionId: String,
    /** The manifest's path on Paperboy's API (`/v1/editions/<id>`), relative to the API's base URL. */
    val manifestPath: String,
    /** The tier whose bundles [fetch] lists: the device's own (or `small` in an iOS alert for the extension). */
    val tier: ImageTier,
    /** After it the edition is not worth downloading: stop, and post nothing. */
    val deadline: Instant,
    /** The tier's bundle URLs in download order; empty when the edition lacks the tier (use the manifest's plan). */
    val fetch: List<String>,
    /** The push's wave (1 for the first), echoed in the receipt. */
    val wave: Int,
    /** When Paperboy sent the push; null from a Paperboy that does not send it. */
    val sentAt: Instant? = null,
    /** Only in an alert for an iOS Notification Service Extension; never in an Android message. */
    val extensionLimits: ExtensionLimits? = null,
    /** Whether the message came with a `notification` (the alert last resort): Android showed it, or will. */
    val isAlert: Boolean = false
) {
    /**
     * What an iOS Notification Service Extension has to fetch in (`extension`: seconds and megabytes). Decoded from a
     * push, each is cut to what iOS gives an extension ([LONGEST_SECONDS], [LARGEST_MEGABYTES]), never below 0, as the
     * Swift client does: the seconds are the extension's time budget there.
     */
    data class ExtensionLimits(val seconds: Int, val megabytes: Int) {
        companion object {
            const val LONGEST_SECONDS = 30
            const val LARGEST_MEGABYTES = 24

            /** Limits from the network, cut to what iOS gives. */
            @JvmStatic
            fun bounded(seconds: Int, megabytes: Int) =
                ExtensionLimits(Math.min(Math.max(0, seconds), LONGEST_SECONDS), Math.min(Math.max(0, megabytes), LARGEST_MEGABYTES))
        }
    }

    /** Whether the deadline has passed at [now]: nothing is worth downloading or posting then. */
    fun isExpired(now: Instant): Boolean = !now.isBefore(deadline)

    /**
     * The receipt's `secondsFromPush` for a run at [now]: from [sentAt] when the push has it, else from
     * [arrival]; rounded to whole seconds, 0 when the device's clock is behind Paperboy's, at most a day (the
     * API's bound).
     */
    fun secondsFromPush(arrival: Instant, now: Instant): Double {
        val from = sentAt ?: arrival
        val seconds = Duration.between(from, now).toNanos() / 1e9
        // Half away from zero, as Swift's rounded() (Math.rint would round 12.5 to 12).
        return Math.min(Math.max(0.0, Math.round(seconds).toDouble()), 86_400.0)
    }

    companion object {
        /** The largest wave a push carries (the server's `deliveries.wave` is a smallint). */
        const val LARGEST_WAVE = 32_767

        /**
         * The message's data as an edition's push.
         * @param isAlert whether the `RemoteMessage` had a `notification` (the alert last resort).
         * @return null when the message is not an edition's (no `edition` key): another kind of message.
         * @throws WakeUpException naming the key that is missing or malformed: log it (a server or proxy bug).
         */
        @JvmStatic
        @JvmOverloads
        @Throws(WakeUpException::class)
        fun decode(data: Map<String, String>, isAlert: Boolean = false): EditionWakeUp? {
            if (!data.containsKey("edition")) return null
            val edition = text(data, "edition")
            if (!isUuid(edition)) throw WakeUpException("edition", "is not a UUID")
            val manifest = text(data, "manifest")
            if (!manifest.startsWith("/")) throw WakeUpException("manifest", "is not a path")
            val tier = ImageTier.of(text(data, "tier")) ?: throw WakeUpException("tier", "is none of small, medium, large")
            val deadline = Rfc3339.parse(text(data, "deadline")) ?: throw WakeUpException("deadline", "is not an RFC 3339 time")
            val sentAt = data["sentAt"]?.let { Rfc3339.parse(it) ?: throw WakeUpException("sentAt", "is not an RFC 3339 time") }
            return EditionWakeUp(
                editionId = asciiLowercase(edition),
                manifestPath = manifest,
                tier = tier,
                deadline = deadline,
                fetch = urls(text(data, "fetch")),
                wave = wave(text(data, "wave")),
                sentAt = sentAt,
                extensionLimits = data["extension"]?.let { limits(it) },
                isAlert = isAlert
            )
        }

        private fun text(data: Map<String, String>, key: String): String =
            data[key] ?: throw WakeUpException(key, "is missing")

        /** Digits, 1 to 32767 (FCM's data is text; the API refuses a receipt's wave outside that range). */
        private fun wave(text: String): Int {
            val number = text.toIntOrNull() ?: throw WakeUpException("wave", "is not a whole number")
            if (number < 1 || number > LARGEST_WAVE) throw WakeUpException("wave", "is not from 1 to $LARGEST_WAVE")
            return number
        }

        private fun urls(text: String): List<String> {
            val list = try {
                Json.parse(text) as? List<*>
            } catch (error: JsonException) {
                null
            } ?: throw WakeUpException("fetch", "is not the JSON text of a list of URLs")
            return list.map { item ->
                val url = item as? String ?: throw WakeUpException("fetch", "is not the JSON text of a list of URLs")
                if (!hasScheme(url)) throw WakeUpException("fetch", "holds '$url', not a URL")
                url
            }
        }

        private fun limits(text: String): ExtensionLimits {
            val refused = WakeUpException("extension", "is not the JSON text of {seconds, megabytes}")
            val value = try {
                Json.parse(text) as? Map<*, *>
            } catch (error: JsonException) {
                null
            } ?: throw refused
            val seconds = whole(value["seconds"]) ?: throw refused
            val megabytes = whole(value["megabytes"]) ?: throw refused
            return ExtensionLimits.bounded(seconds, megabytes)
        }

        private fun whole(value: Any?): Int? = try {
            (value as? BigDecimal)?.intValueExact()
        } catch (error: ArithmeticException) {
            null
        }

        private fun hasScheme(url: String): Boolean = try {
            URI(url).scheme != null
        } catch (error: URISyntaxException) {
            false
        }

        private val uuid = Regex("[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")

        internal fun isUuid(text: String) = uuid.matches(text)
    }
}

/** A Paperboy push that cannot be used, naming its key: log it and do nothing (no receipt: nothing ran). */
class WakeUpException(val key: String, val problem: String) : Exception("the push's $key $problem")

/** ASCII-only lowercasing: never the locale's (a Turkish `I`), and no call deprecated in a later Kotlin. */
internal fun asciiLowercase(text: String): String {
    val out = StringBuilder(text.length)
    for (char in text) out.append(if (char in 'A'..'Z') char + ('a' - 'A') else char)
    return out.toString()
}
