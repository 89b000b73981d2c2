@file:Suppress("UNUSED_PARAMETER", "unused")

package kotlinx.coroutines

import kotlin.coroutines.AbstractCoroutineContextElement
import kotlin.coroutines.ContinuationInterceptor
import kotlin.coroutines.CoroutineContext

/** Stand-ins (stubs/README.md): the few kotlinx.coroutines members the glue uses. */
interface CoroutineScope {
    val coroutineContext: CoroutineContext
}

abstract class CoroutineDispatcher : AbstractCoroutineContextElement(ContinuationInterceptor), ContinuationInterceptor

object Dispatchers {
    val IO: CoroutineDispatcher get() = throw NotImplementedError("Stub!")
}

suspend fun <T> withContext(context: CoroutineContext, block: suspend CoroutineScope.() -> T): T = throw NotImplementedError("Stub!")
