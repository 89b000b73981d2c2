package paperboy.client

import java.io.File
import java.io.FileOutputStream
import java.io.IOException
import java.net.HttpURLConnection
import java.net.URL

/**
 * Downloads one bundle to a partial file, resuming what an earlier run left there with an HTTP range (206), within a
 * hard deadline, never past the bundle's published length. Checking it is [BundleCheck]'s.
 */
class BundleDownloader {
    /** What a run of [download] got. */
    data class Progress(
        /** Bytes received in this run (the receipt's `bytes` counts these). */
        val bytesThisRun: Long,
        /** Whether the partial file now has the bundle's length (it may still be the wrong file). */
        val complete: Boolean
    )

    /**
     * Fetches [bundle] into [part], appending to what it holds when the server honours the range.
     * @param deadlineNanos a `System.nanoTime()` instant: the edition's deadline or the worker's budget, the sooner.
     * @throws IOException for a failed transfer, an answer other than 200 or 206, or the deadline (the partial file is
     * kept for the next run).
     */
    @Throws(IOException::class)
    fun download(bundle: EditionManifest.Bundle, part: File, deadlineNanos: Long): Progress {
        var have = if (part.isFile) part.length() else 0L
        if (have > bundle.bytes) {
            part.delete()
            have = 0L
        }
        if (have == bundle.bytes) return Progress(0, true)
        val connection = URL(bundle.url).openConnection() as HttpURLConnection
        val budget = HardDeadline.remaining(deadlineNanos) / 1e9
        return try {
            HardDeadline.run(connection, deadlineNanos, budget) { transfer(connection, bundle, part, have, deadlineNanos) }
        } catch (error: HardDeadline.DeadlinePassed) {
            throw IOException(error.message, error)
        }
    }

    private fun transfer(connection: HttpURLConnection, bundle: EditionManifest.Bundle, part: File, have: Long, deadline: Long): Progress {
        try {
            connection.connectTimeout = HardDeadline.timeoutMillis(deadline)
            connection.readTimeout = Math.min(IDLE_MILLIS, HardDeadline.timeoutMillis(deadline))
            connection.useCaches = false
            if (have > 0) connection.setRequestProperty("Range", "bytes=$have-")
            val status = connection.responseCode
            val append = when {
                status == 206 && have > 0 -> true
                status == 200 -> false
                status == 416 -> {
                    // The range is past the file's end: what we have is not a prefix of this bundle.
                    part.delete()
                    throw IOException("HTTP 416 for a resumed download; the partial file was discarded")
                }
                else -> throw IOException("HTTP $status for ${bundle.url}")
            }
            part.parentFile?.mkdirs()
            var written = if (append) have else 0L
            var received = 0L
            connection.inputStream.use { input ->
                FileOutputStream(part, append).use { output ->
                    val buffer = ByteArray(64 * 1024)
                    while (written < bundle.bytes) {
                        if (HardDeadline.remaining(deadline) == 0L) throw IOException("the deadline passed while downloading")
                        val wanted = Math.min(buffer.size.toLong(), bundle.bytes - written).toInt()
                        val count = input.read(buffer, 0, wanted)
                        if (count < 0) break
                        output.write(buffer, 0, count)
                        written += count
                        received += count
                    }
                }
            }
            return Progress(received, written == bundle.bytes)
        } finally {
            connection.disconnect()
        }
    }

    companion object {
        /** The longest silence within a transfer before it counts as failed (the deadline bounds the whole). */
        const val IDLE_MILLIS = 30_000
    }
}
