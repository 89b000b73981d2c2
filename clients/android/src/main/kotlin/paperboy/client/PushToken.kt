package paperboy.client

import java.nio.charset.StandardCharsets

/**
 * The device's token as Paperboy takes it in `/v1/devices/{token}`: an FCM registration token as Firebase gives
 * it (an Android app's), or an APNs token's bytes (for completeness: an iOS app's, sent as lowercase hex).
 */
sealed class PushToken {
    /** The token's text: as is for FCM, lowercase hex for APNs. */
    abstract val text: String

    data class Fcm(val token: String) : PushToken() {
        override val text: String get() = token
    }

    class Apns(bytes: ByteArray) : PushToken() {
        private val bytes = bytes.copyOf()
        override val text: String get() = BundleCheck.hex(bytes)
        override fun equals(other: Any?) = other is Apns && other.text == text
        override fun hashCode() = text.hashCode()
        override fun toString() = "Apns($text)"
    }

    /**
     * The token as a path segment: every byte but ASCII letters, digits, `-` and `_` percent-encoded (an FCM
     * token's `:` becomes `%3A`; Paperboy takes both forms).
     */
    val pathSegment: String
        get() {
            val out = StringBuilder()
            for (byte in text.toByteArray(StandardCharsets.UTF_8)) {
                val value = byte.toInt() and 0xff
                val char = value.toChar()
                if (char in 'a'..'z' || char in 'A'..'Z' || char in '0'..'9' || char == '-' || char == '_') out.append(char)
                else out.append('%').append("0123456789ABCDEF"[value shr 4]).append("0123456789ABCDEF"[value and 0xf])
            }
            return out.toString()
        }

    /** The form kept in the outbox file: `fcm:<token>` or `apns:<hex>`. */
    internal val stored: String get() = if (this is Fcm) "fcm:$token" else "apns:$text"

    companion object {
        internal fun fromStored(text: String): PushToken? = when {
            text.startsWith("fcm:") -> Fcm(text.substring(4))
            text.startsWith("apns:") -> hexBytes(text.substring(5))?.let { Apns(it) }
            else -> null
        }

        private fun hexBytes(hex: String): ByteArray? {
            if (hex.length % 2 != 0) return null
            val bytes = ByteArray(hex.length / 2)
            for (index in bytes.indices) {
                val high = Character.digit(hex[2 * index], 16)
                val low = Character.digit(hex[2 * index + 1], 16)
                if (high < 0 || low < 0) return null
                bytes[index] = (high * 16 + low).toByte()
            }
            return bytes
        }
    }
}
