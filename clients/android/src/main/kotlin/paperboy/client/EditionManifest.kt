package paperboy.client

import java.math.BigDecimal
import java.net.URI
import java.net.URISyntaxException
import java.time.Instant

/**
 * An edition as `GET /v1/editions/{id}` (the push's `manifest`) and `GET /v1/editions/latest` answer it: per tier
 * its bundles with their sizes and SHA-256, and the pages. Tiers the edition lacks are absent; a tier this client
 * does not know (a later Paperboy's) is skipped, not an error.
 */
data class EditionManifest(
    /** The edition's id (lowercase UUID). */
    val id: String,
    val publication: String,
    /** The day it is for, `YYYY-MM-DD`. */
    val issueDate: String,
    /** RFC 3339 with the newsroom's offset, as published. */
    val deadlineText: String,
    val deadline: Instant,
    val pages: List<Page>,
    /** The bundles per known tier, in the manifest's order. */
    val tiers: Map<ImageTier, List<Bundle>>
) {
    data class Bundle(
        val url: String,
        /** The bundle's length: a download of another length failed. */
        val bytes: Long,
        /** Its SHA-256 in hex (the server takes either case; compared in lowercase). */
        val sha256: String
    )

    data class Page(val number: Int, val title: String?)

    /**
     * What a device of [tier] downloads: its tier's bundles, or when the edition lacks them the nearest tier it
     * has ([ImageTier.fallbackOrder]). Null only for an edition without any bundle.
     */
    fun plan(tier: ImageTier): DownloadPlan? {
        for (candidate in tier.fallbackOrder) {
            val bundles = tiers[candidate]
            if (bundles != null && bundles.isNotEmpty()) return DownloadPlan(candidate, bundles, candidate != tier)
        }
        return null
    }

    companion object {
        /**
         * The manifest in the API's JSON.
         * @throws ManifestException naming the field at fault (`tiers.large.bundles[0].sha256`): the edition
         * cannot be downloaded and checked as it is (post `failed`; the server refuses such editions on publish).
         */
        @JvmStatic
        @Throws(ManifestException::class)
        fun parse(json: String): EditionManifest {
            val value = try {
                Json.parse(json)
            } catch (error: JsonException) {
                throw ManifestException("body", "is not JSON: ${error.message}")
            }
            @Suppress("UNCHECKED_CAST")
            val root = value as? Map<String, Any?> ?: throw ManifestException("body", "is not an object")
            return from(root)
        }

        private val refuse: (String, String) -> Nothing = { field, problem -> throw ManifestException(field, problem) }

        @JvmStatic
        @Throws(ManifestException::class)
        fun from(root: Map<String, Any?>): EditionManifest {
            val fields = JsonFields(root, "")
            val id = fields.string("id", refuse)
            if (!EditionWakeUp.isUuid(id)) throw ManifestException("id", "is not a UUID")
            val publication = fields.string("publication", refuse)
            val issueDate = fields.string("issueDate", refuse)
            val deadlineText = fields.string("deadline", refuse)
            val deadline = Rfc3339.parse(deadlineText) ?: throw ManifestException("deadline", "is not an RFC 3339 time")
            val pages = if (fields.has("pages")) fields.list("pages", refuse).mapIndexed { index, item -> page(item, "pages[$index]") } else emptyList()
            val tiers = LinkedHashMap<ImageTier, List<Bundle>>()
            for ((name, tierValue) in fields.obj("tiers", refuse)) {
                @Suppress("UNCHECKED_CAST")
                val tierObject = tierValue as? Map<String, Any?> ?: throw ManifestException("tiers.$name", "is not an object")
                val known = ImageTier.of(name) ?: continue
                val bundles = JsonFields(tierObject, "tiers.$name").list("bundles", refuse)
                tiers[known] = bundles.mapIndexed { index, item -> bundle(item, "tiers.$name.bundles[$index]") }
            }
            return EditionManifest(asciiLowercase(id), publication, issueDate, deadlineText, deadline, pages, tiers)
        }

        private fun page(value: Any?, path: String): Page {
            @Suppress("UNCHECKED_CAST")
            val fields = JsonFields(value as? Map<String, Any?> ?: throw ManifestException(path, "is not an object"), path)
            val number = fields.long("number", refuse)
            if (number < 1 || number > Int.MAX_VALUE) throw ManifestException("$path.number", "is not a page number")
            return Page(number.toInt(), fields.optionalString("title", refuse))
        }

        private val hex = Regex("[0-9a-fA-F]{64}")

        private fun bundle(value: Any?, path: String): Bundle {
            @Suppress("UNCHECKED_CAST")
            val fields = JsonFields(value as? Map<String, Any?> ?: throw ManifestException(path, "is not an object"), path)
            val url = fields.string("url", refuse)
            val scheme = try {
                URI(url).let { if (it.host.isNullOrEmpty()) null else it.scheme }
            } catch (error: URISyntaxException) {
                null
            }
            if (scheme == null || (asciiLowercase(scheme) != "https" && asciiLowercase(scheme) != "http")) {
                throw ManifestException("$path.url", "is not an absolute http(s) URL")
            }
            if (fields.raw("bytes") is BigDecimal && (fields.raw("bytes") as BigDecimal).signum() <= 0) {
                throw ManifestException("$path.bytes", "is not greater than 0")
            }
            val bytes = fields.long("bytes", refuse)
            val sha256 = fields.string("sha256", refuse)
            if (!hex.matches(sha256)) throw ManifestException("$path.sha256", "is not 64 hexadecimal characters")
            return Bundle(url, bytes, sha256)
        }
    }
}

/** The bundles a device downloads for an edition, and the tier they are of. */
data class DownloadPlan(
    val tier: ImageTier,
    val bundles: List<EditionManifest.Bundle>,
    /** Whether the edition lacks the device's own tier and [tier] is the nearest it has. */
    val fellBack: Boolean
) {
    /** The bytes to download in all. */
    val bytes: Long get() = bundles.fold(0L) { sum, bundle -> sum + bundle.bytes }
}

/** A manifest this client cannot download and check, naming the field (a JSON path) at fault. */
class ManifestException(val field: String, val problem: String) : Exception("$field $problem")
