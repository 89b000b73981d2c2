package paperboy.client

import com.sun.net.httpserver.HttpExchange
import com.sun.net.httpserver.HttpServer
import java.net.InetAddress
import java.net.InetSocketAddress
import java.nio.charset.StandardCharsets
import java.util.Collections
import java.util.concurrent.Executors

/** A local HTTP server on 127.0.0.1 (port 0) answering as a test scripts it, and remembering each request. */
class FakeServer : AutoCloseable {
    /** A request as it arrived. */
    class Request(val method: String, val path: String, val headers: Map<String, String>, val body: ByteArray) {
        val text: String get() = String(body, StandardCharsets.UTF_8)
    }

    private val server: HttpServer = HttpServer.create(InetSocketAddress(InetAddress.getByName("127.0.0.1"), 0), 0)
    private val pool = Executors.newCachedThreadPool()
    val requests: MutableList<Request> = Collections.synchronizedList(ArrayList<Request>())

    /** The handler of every request: the test's script. */
    @Volatile
    var handler: (Request, HttpExchange) -> Unit = { _, exchange -> respond(exchange, 404, "") }

    init {
        server.executor = pool
        server.createContext("/") { exchange ->
            try {
                val headers = HashMap<String, String>()
                for ((name, values) in exchange.requestHeaders) headers[name.map { if (it in 'A'..'Z') it + 32 else it }.joinToString("")] = values.joinToString(",")
                val request = Request(exchange.requestMethod, exchange.requestURI.rawPath + (exchange.requestURI.rawQuery?.let { "?$it" } ?: ""),
                    headers, exchange.requestBody.readBytes())
                requests.add(request)
                handler(request, exchange)
            } catch (error: Exception) {
                // A client that gave up closed the connection: nothing to answer.
            } finally {
                exchange.close()
            }
        }
        server.start()
    }

    val url: String get() = "http://127.0.0.1:${server.address.port}"

    override fun close() {
        server.stop(0)
        pool.shutdownNow()
    }

    companion object {
        fun respond(exchange: HttpExchange, status: Int, body: String, headers: Map<String, String> = emptyMap()) {
            val bytes = body.toByteArray(StandardCharsets.UTF_8)
            for ((name, value) in headers) exchange.responseHeaders.add(name, value)
            if (bytes.isNotEmpty()) exchange.responseHeaders.add("Content-Type", "application/json")
            exchange.sendResponseHeaders(status, if (bytes.isEmpty()) -1 else bytes.size.toLong())
            if (bytes.isNotEmpty()) exchange.responseBody.use { it.write(bytes) }
        }

        fun error(exchange: HttpExchange, status: Int, code: String, field: String?, headers: Map<String, String> = emptyMap()) {
            val detail = LinkedHashMap<String, Any?>()
            detail["code"] = code
            if (field != null) detail["field"] = field
            detail["message"] = "$code ${field ?: ""}"
            respond(exchange, status, Json.write(mapOf("error" to detail)), headers)
        }
    }
}
