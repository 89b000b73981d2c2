package paperboy.client

import java.io.File
import java.io.FileOutputStream
import java.io.IOException
import java.io.RandomAccessFile
import java.nio.charset.StandardCharsets
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.locks.ReentrantLock

/**
 * The outbox kept in a file, with the token the device last registered, as `ReceiptOutboxFile` in the Swift client.
 * Every change reads, changes and writes the file under a lock (a [java.nio.channels.FileLock] on a lock file
 * beside it, for another process of the app, and a lock per path within this one), and writes it atomically (a
 * temporary file renamed over it), so that a receipt added by one writer is never lost by another's write.
 *
 * A file that cannot be read (cut short by a crash of an older version, or hand-edited) is moved aside to
 * `<name>.unreadable` and the outbox starts empty, rather than failing every receipt from then on; [onUnreadable] is
 * told where and why (the glue logs it), as `ReceiptOutboxFile`'s hook in the Swift client.
 */
class ReceiptOutboxFile @JvmOverloads constructor(
    val file: File,
    private val onUnreadable: (setAside: File, error: Exception) -> Unit = { _, _ -> }
) {
    /** What the file holds. */
    class Contents(
        val outbox: ReceiptOutbox = ReceiptOutbox(),
        /** The token of the last successful registration: the one receipts are posted under. */
        var token: PushToken? = null
    )

    /** The contents (empty when there is no file yet). */
    @Throws(IOException::class)
    fun read(): Contents = locked { load() }

    /** Reads, changes and writes the contents under the lock; answers what [change] answers. */
    @Throws(IOException::class)
    fun <T> update(change: (Contents) -> T): T = locked {
        val contents = load()
        val value = change(contents)
        val body = LinkedHashMap<String, Any?>()
        body["outbox"] = contents.outbox.toJsonObject()
        contents.token?.let { body["token"] = it.stored }
        val temporary = File(file.parentFile, file.name + ".tmp")
        FileOutputStream(temporary).use { stream ->
            stream.write(Json.write(body).toByteArray(StandardCharsets.UTF_8))
            stream.fd.sync()
        }
        if (!temporary.renameTo(file)) throw IOException("cannot move $temporary over $file")
        value
    }

    private fun load(): Contents {
        if (!file.exists()) return Contents()
        val text = String(file.readBytes(), StandardCharsets.UTF_8)
        return try {
            @Suppress("UNCHECKED_CAST")
            val root = Json.parse(text) as? Map<String, Any?> ?: throw JsonException("not an object")
            @Suppress("UNCHECKED_CAST")
            val outbox = root["outbox"] as? Map<String, Any?> ?: throw JsonException("no outbox")
            Contents(ReceiptOutbox.fromJsonObject(outbox), (root["token"] as? String)?.let { PushToken.fromStored(it) })
        } catch (error: JsonException) {
            val aside = File(file.parentFile, file.name + ".unreadable")
            file.renameTo(aside)
            onUnreadable(aside, error)
            Contents()
        }
    }

    private fun <T> locked(body: () -> T): T {
        val path = file.absoluteFile.path
        val inProcess = locks.getOrPut(path) { ReentrantLock() }
        inProcess.lock()
        try {
            RandomAccessFile(File(path + ".lock"), "rw").use { lockFile ->
                val lock = lockFile.channel.lock()
                try {
                    return body()
                } finally {
                    lock.release()
                }
            }
        } finally {
            inProcess.unlock()
        }
    }

    companion object {
        // A FileLock is held per JVM, not per thread: two threads of one process are ordered by this lock first.
        private val locks = ConcurrentHashMap<String, ReentrantLock>()
    }
}
