package paperboy.client

import java.io.File
import java.io.FileInputStream
import java.io.IOException
import java.io.InputStream
import java.security.MessageDigest

/**
 * Checks a downloaded bundle against its manifest entry before it is used: its length first (cheap), then its
 * SHA-256. A mismatch is a failed download: the file is not the bundle (post `failed`; the next wave tries again).
 */
object BundleCheck {
    /** What a downloaded file is, against its manifest entry. */
    sealed class Verdict {
        /** The bundle, as published. */
        object Verified : Verdict() {
            override fun toString() = "Verified"
        }

        /** Another length: truncated, or another file. The digest was not computed. */
        data class WrongLength(val expected: Long, val actual: Long) : Verdict()

        /** The right length and another SHA-256: corrupted, or another file. */
        data class WrongDigest(val expected: String, val actual: String) : Verdict()

        val isVerified: Boolean get() = this === Verified
    }

    /** The file's verdict against [bundle]. */
    @JvmStatic
    @Throws(IOException::class)
    fun check(file: File, bundle: EditionManifest.Bundle): Verdict {
        val length = file.length()
        if (!file.isFile || length != bundle.bytes) return Verdict.WrongLength(bundle.bytes, if (file.isFile) length else -1)
        val digest = FileInputStream(file).use { sha256(it) }
        val expected = asciiLowercase(bundle.sha256)
        return if (digest == expected) Verdict.Verified else Verdict.WrongDigest(expected, digest)
    }

    /**
     * Checks [download] and, when it is the bundle, moves it to [target] (replacing what was there); otherwise
     * deletes it, so that a bad file is never resumed or used.
     * @return the verdict; [target] holds the bundle only when it is [Verdict.Verified].
     */
    @JvmStatic
    @Throws(IOException::class)
    fun place(download: File, bundle: EditionManifest.Bundle, target: File): Verdict {
        val verdict = check(download, bundle)
        if (!verdict.isVerified) {
            download.delete()
            return verdict
        }
        target.parentFile?.mkdirs()
        if (target.exists() && !target.delete()) throw IOException("cannot replace $target")
        if (!download.renameTo(target)) throw IOException("cannot move $download to $target")
        return verdict
    }

    /** The lowercase hex SHA-256 of what [input] holds, read in 64 KiB chunks (never the whole bundle in memory). */
    @JvmStatic
    @Throws(IOException::class)
    fun sha256(input: InputStream): String {
        val digest = MessageDigest.getInstance("SHA-256")
        val buffer = ByteArray(64 * 1024)
        while (true) {
            val count = input.read(buffer)
            if (count < 0) break
            digest.update(buffer, 0, count)
        }
        return hex(digest.digest())
    }

    internal fun hex(bytes: ByteArray): String {
        val digits = "0123456789abcdef"
        val out = StringBuilder(bytes.size * 2)
        for (byte in bytes) {
            val value = byte.toInt() and 0xff
            out.append(digits[value shr 4]).append(digits[value and 0xf])
        }
        return out.toString()
    }
}
