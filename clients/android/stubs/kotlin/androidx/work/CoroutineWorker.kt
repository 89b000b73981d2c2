@file:Suppress("UNUSED_PARAMETER", "unused")

package androidx.work

import android.content.Context
import com.google.common.util.concurrent.ListenableFuture

/** Stand-in (stubs/README.md): work-runtime 2.9's CoroutineWorker, whose suspend functions only Kotlin declares. */
abstract class CoroutineWorker(appContext: Context, params: WorkerParameters) : ListenableWorker(appContext, params) {
    abstract suspend fun doWork(): Result

    open suspend fun getForegroundInfo(): ForegroundInfo = throw NotImplementedError("Stub!")

    suspend fun setForeground(foregroundInfo: ForegroundInfo): Unit = throw NotImplementedError("Stub!")

    final override fun startWork(): ListenableFuture<Result> = throw NotImplementedError("Stub!")
}
