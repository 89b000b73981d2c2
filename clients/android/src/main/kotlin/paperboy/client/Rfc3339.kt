package paperboy.client

import java.time.Instant
import java.time.OffsetDateTime
import java.time.format.DateTimeFormatter
import java.time.format.DateTimeParseException
import java.time.temporal.ChronoUnit

/** RFC 3339 times as Paperboy writes them: `2026-11-23T09:00:00+09:00`, `2026-11-22T20:05:09Z`. */
object Rfc3339 {
    // The shape the server checks (EditionManifest.parseDeadline): seconds required, `Z` or `±HH:MM`.
    private val shape = Regex("\\d{4}-\\d{2}-\\d{2}[Tt]\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?([Zz]|[+-]\\d{2}:\\d{2})")

    /** The instant, or null when the text is not RFC 3339 with an offset (or no real date and time). */
    @JvmStatic
    fun parse(text: String): Instant? {
        if (!shape.matches(text)) return null
        val upper = text.replace('t', 'T').replace('z', 'Z')
        return try {
            OffsetDateTime.parse(upper, DateTimeFormatter.ISO_OFFSET_DATE_TIME).toInstant()
        } catch (error: DateTimeParseException) {
            null
        }
    }

    /** UTC to the second, as the server writes `sentAt` (always 20 characters). */
    @JvmStatic
    fun format(instant: Instant): String = DateTimeFormatter.ISO_INSTANT.format(instant.truncatedTo(ChronoUnit.SECONDS))
}
