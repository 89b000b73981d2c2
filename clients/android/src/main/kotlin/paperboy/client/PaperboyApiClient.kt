package paperboy.client

import java.io.ByteArrayOutputStream
import java.io.IOException
import java.io.InputStream
import java.net.HttpURLConnection
import java.net.URL
import java.net.URLEncoder
import java.nio.charset.StandardCharsets

/**
 * Paperboy's device API, for an app, as `PaperboyAPIClient` in the Swift client: register, read the device, read an
 * edition, post a receipt, report an open, remove or erase the device. Each call sends the app's device API key in
 * `X-API-Key` and answers the decoded value, or throws [PaperboyApiException] with the status, the error's code and
 * field, `Retry-After`, and the [ApiReaction] to it.
 *
 * Every call has a hard total deadline ([timeoutSeconds], 20 s by default): connecting, sending and reading the whole
 * answer end by then, whatever the server does; past it the call throws with `status` null (no answer, which the
 * outbox retries later). Blocking: call it from a worker's thread, never the main thread. `java.net.HttpURLConnection`
 * only, which Android has (it has no `java.net.http`).
 */
class PaperboyApiClient @JvmOverloads constructor(
    /** Where `paperboy serve` (or the proxy before it) answers, e.g. `https://push.example.com`. */
    baseUrl: String,
    private val apiKey: String,
    /** How long a call may take in all before it counts as no answer. */
    val timeoutSeconds: Double = 20.0
) : ReceiptSender {
    private val base = baseUrl.trimEnd('/')

    /** `PUT /v1/devices/{token}`: at every launch, and when the token or a setting changes. Answers the device and whether it was created (201). */
    @Throws(PaperboyApiException::class)
    fun register(token: PushToken, registration: DeviceRegistration): Pair<RegisteredDevice, Boolean> {
        val answer = send("PUT", "/v1/devices/${token.pathSegment}", registration.toJson())
        return Pair(decode("a device", answer) { RegisteredDevice.parse(it) }, answer.status == 201)
    }

    /** `GET /v1/devices/{token}`: what Paperboy holds about this device. */
    @Throws(PaperboyApiException::class)
    fun device(token: PushToken): RegisteredDevice =
        decode("a device", send("GET", "/v1/devices/${token.pathSegment}", null)) { RegisteredDevice.parse(it) }

    /** `DELETE /v1/devices/{token}`: stops broadcasts to the device (kept, inactive), or with [erase] deletes it and its data. */
    @Throws(PaperboyApiException::class)
    @JvmOverloads
    fun remove(token: PushToken, erase: Boolean = false) {
        send("DELETE", "/v1/devices/${token.pathSegment}" + if (erase) "?erase=true" else "", null)
    }

    /** The edition at a push's `manifest` path (`/v1/editions/<id>`). */
    @Throws(PaperboyApiException::class)
    fun manifest(path: String): EditionManifest {
        if (!path.startsWith("/")) throw PaperboyApiException(null, detail = "the manifest's path '$path' is not a path")
        return decode("an edition", send("GET", path, null)) { EditionManifest.parse(it) }
    }

    /** `GET /v1/editions/latest?publication=…`: the newest edition, for an app opened without a push. */
    @Throws(PaperboyApiException::class)
    fun latestEdition(publication: String): EditionManifest {
        val name = URLEncoder.encode(publication, "UTF-8").replace("+", "%20")
        return decode("an edition", send("GET", "/v1/editions/latest?publication=$name", null)) { EditionManifest.parse(it) }
    }

    /** `POST /v1/devices/{token}/receipts`. Prefer [ReceiptCourier], which keeps the receipt until it is stored. */
    @Throws(PaperboyApiException::class)
    override fun postReceipt(receipt: ReceiptReport, token: PushToken): Pair<StoredReceipt, Boolean> {
        val answer = send("POST", "/v1/devices/${token.pathSegment}/receipts", receipt.toJson())
        val stored = decode("a receipt", answer) { text ->
            val body = Json.parse(text) as? Map<*, *> ?: throw JsonException("not an object")
            val editionId = body["editionId"] as? String ?: throw JsonException("no editionId")
            val result = (body["result"] as? String)?.let { ReceiptResult.of(it) } ?: throw JsonException("no result")
            StoredReceipt(editionId, result)
        }
        return Pair(stored, answer.status == 201)
    }

    /**
     * `POST /v1/devices/{token}/opens` ([OpenReport]): the app came to the foreground, now. On any error drop it and
     * never send it later: the report's time is what Paperboy learns.
     */
    @Throws(PaperboyApiException::class)
    fun reportOpen(token: PushToken) {
        send(OpenReport.METHOD, OpenReport.path(token), null)
    }

    /** A status with its body (text) and `Retry-After`. */
    class Answer(val status: Int, val body: String, val retryAfter: String?)

    /**
     * One exchange within the deadline: 2xx answers, anything else throws.
     * @throws PaperboyApiException with the status and the error body, or `status` null when no answer came in time.
     */
    @Throws(PaperboyApiException::class)
    fun send(method: String, path: String, body: String?): Answer {
        val budgetNanos = (timeoutSeconds * 1e9).toLong()
        val deadline = System.nanoTime() + budgetNanos
        val connection = try {
            URL(base + path).openConnection() as HttpURLConnection
        } catch (error: IOException) {
            throw PaperboyApiException(null, detail = "$method $path: ${error.message}", cause = error)
        }
        val answer = try {
            HardDeadline.run(connection, deadline, timeoutSeconds) { exchange(connection, method, body, deadline) }
        } catch (error: HardDeadline.DeadlinePassed) {
            throw PaperboyApiException(null, detail = "$method $path: ${error.message}", cause = error)
        } catch (error: IOException) {
            throw PaperboyApiException(null, detail = "$method $path: ${error.javaClass.simpleName}: ${error.message}", cause = error)
        }
        if (answer.status !in 200..299) throw PaperboyApiException.fromAnswer(answer.status, answer.body, answer.retryAfter)
        return answer
    }

    private fun exchange(connection: HttpURLConnection, method: String, body: String?, deadline: Long): Answer {
        try {
            connection.connectTimeout = HardDeadline.timeoutMillis(deadline)
            connection.readTimeout = HardDeadline.timeoutMillis(deadline)
            connection.instanceFollowRedirects = false
            connection.useCaches = false
            connection.requestMethod = method
            connection.setRequestProperty("X-API-Key", apiKey)
            connection.setRequestProperty("Accept", "application/json")
            if (method == "POST" || method == "PUT") {
                val bytes = (body ?: "").toByteArray(StandardCharsets.UTF_8)
                if (body != null) connection.setRequestProperty("Content-Type", "application/json")
                // Buffered, not setFixedLengthStreamingMode: in streaming mode the JDK cannot read a 401's body
                // (HttpRetryException), and bodies are small (the API takes at most 16 KiB). An open report sends
                // `Content-Length: 0`, which every proxy takes.
                connection.doOutput = true
                connection.outputStream.use { it.write(bytes) }
            }
            val status = connection.responseCode
            val stream: InputStream? = if (status >= 400) connection.errorStream else connection.inputStream
            val text = stream?.use { readAll(it, deadline) } ?: ""
            return Answer(status, text, connection.getHeaderField("Retry-After"))
        } finally {
            connection.disconnect()
        }
    }

    private fun readAll(stream: InputStream, deadline: Long): String {
        val out = ByteArrayOutputStream()
        val buffer = ByteArray(16 * 1024)
        while (true) {
            if (HardDeadline.remaining(deadline) == 0L) throw IOException("the deadline passed while reading")
            val count = stream.read(buffer)
            if (count < 0) break
            out.write(buffer, 0, count)
            if (out.size() > MAXIMUM_ANSWER_BYTES) throw IOException("an answer over $MAXIMUM_ANSWER_BYTES bytes")
        }
        return String(out.toByteArray(), StandardCharsets.UTF_8)
    }

    private fun <T> decode(what: String, answer: Answer, parse: (String) -> T): T = try {
        parse(answer.body)
    } catch (error: JsonException) {
        throw PaperboyApiException(null, detail = "the answer is not $what: ${error.message}", cause = error)
    } catch (error: ManifestException) {
        throw PaperboyApiException(null, field = error.field, detail = "the answer is not $what that can be downloaded: ${error.message}", cause = error)
    }

    companion object {
        /** The largest answer read (an edition is at most 1 MiB as published). */
        const val MAXIMUM_ANSWER_BYTES = 4 * 1024 * 1024
    }
}
