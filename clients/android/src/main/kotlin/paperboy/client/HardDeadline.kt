package paperboy.client

import java.net.HttpURLConnection
import java.util.concurrent.Callable
import java.util.concurrent.ExecutionException
import java.util.concurrent.Executors
import java.util.concurrent.Future
import java.util.concurrent.ThreadFactory
import java.util.concurrent.TimeUnit
import java.util.concurrent.TimeoutException

/**
 * A total deadline for one HTTP exchange, which `HttpURLConnection`'s own timeouts are not: its connect and read
 * timeouts bound each wait, so a server that trickles a byte every few seconds, or a DNS lookup that hangs, holds a
 * call for ever. The exchange runs on a pool thread and the caller waits for it at most until the deadline; then
 * the connection is disconnected (which ends a blocked read on the JVM and on Android) and the caller gets
 * [DeadlinePassed] at once, whatever the pool thread is still blocked in. That thread's own connect and read timeouts
 * are set to the budget, so it ends too.
 */
internal object HardDeadline {
    private val pool = Executors.newCachedThreadPool(ThreadFactory { runnable ->
        val thread = Thread(runnable, "paperboy-http")
        thread.isDaemon = true
        thread
    })

    class DeadlinePassed(seconds: Double) : Exception("no answer within its deadline of $seconds s")

    /** Nanoseconds left until [deadlineNanos] (a `System.nanoTime()` instant), at least 0. */
    fun remaining(deadlineNanos: Long): Long = Math.max(0L, deadlineNanos - System.nanoTime())

    /** A timeout for `setConnectTimeout`/`setReadTimeout`: the time left, at least 1 ms (0 would mean none). */
    fun timeoutMillis(deadlineNanos: Long): Int = Math.max(1L, Math.min(Int.MAX_VALUE.toLong(), TimeUnit.NANOSECONDS.toMillis(remaining(deadlineNanos)))).toInt()

    /**
     * Runs [exchange] on [connection], answering its value, or throwing [DeadlinePassed] at [deadlineNanos] at the
     * latest, or the exception [exchange] threw.
     */
    @Throws(Exception::class)
    fun <T> run(connection: HttpURLConnection, deadlineNanos: Long, budgetSeconds: Double, exchange: () -> T): T {
        val future: Future<T> = pool.submit(Callable { exchange() })
        try {
            return future.get(remaining(deadlineNanos), TimeUnit.NANOSECONDS)
        } catch (timeout: TimeoutException) {
            abandon(connection, future)
            throw DeadlinePassed(budgetSeconds)
        } catch (interrupted: InterruptedException) {
            abandon(connection, future)
            Thread.currentThread().interrupt()
            throw DeadlinePassed(budgetSeconds)
        } catch (failed: ExecutionException) {
            val cause = failed.cause
            if (cause is Exception) throw cause
            throw failed
        }
    }

    private fun abandon(connection: HttpURLConnection, future: Future<*>) {
        future.cancel(true)
        // disconnect() may itself wait for a lock the blocked thread holds on some JDKs: never on the caller's thread.
        pool.execute { connection.disconnect() }
    }
}
