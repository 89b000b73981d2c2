package paperboy.client

import java.io.File
import java.math.BigDecimal
import java.nio.charset.StandardCharsets
import java.time.Instant

/** The golden vectors (clients/vectors), read as JSON. build.sh passes their folder as `paperboy.vectors`. */
object Vectors {
    val directory: File by lazy {
        val given = System.getProperty("paperboy.vectors")
        val folder = if (given != null) File(given) else File("../vectors")
        require(folder.isDirectory) { "the golden vectors are not at ${folder.absolutePath}: run clients/android/build.sh" }
        folder
    }

    @Suppress("UNCHECKED_CAST")
    fun load(path: String): Map<String, Any?> =
        Json.parse(String(File(directory, path).readBytes(), StandardCharsets.UTF_8)) as Map<String, Any?>

    fun files(folder: String, prefix: String): List<String> =
        (File(directory, folder).list() ?: emptyArray()).filter { it.startsWith(prefix) && it.endsWith(".json") }.sorted().map { "$folder/$it" }
}

@Suppress("UNCHECKED_CAST")
fun Any?.obj(): Map<String, Any?> = this as Map<String, Any?>

@Suppress("UNCHECKED_CAST")
fun Any?.list(): List<Any?> = this as List<Any?>

fun Any?.int(): Int = (this as BigDecimal).intValueExact()

fun Any?.long(): Long = (this as BigDecimal).longValueExact()

fun Any?.double(): Double = (this as BigDecimal).toDouble()

fun Any?.strings(): Map<String, String> = obj().mapValues { it.value as String }

/** A vector's UNIX seconds, exactly (12.5 stays 12.5: no binary fraction on the way). */
fun epoch(seconds: Any?): Instant {
    val exact = seconds as BigDecimal
    val whole = exact.setScale(0, java.math.RoundingMode.FLOOR)
    return Instant.ofEpochSecond(whole.longValueExact(), exact.subtract(whole).movePointRight(9).toLong())
}
