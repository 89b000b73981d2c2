package paperboy.client

import org.junit.After
import org.junit.Assert.assertEquals
import org.junit.Assert.assertTrue
import org.junit.Test
import java.io.File
import java.nio.file.Files
import java.time.Instant

/** The courier against a local fake server, on an injected clock: it sends what the outbox's rules say. */
class CourierTests {
    private val server = FakeServer()
    private val folder: File = Files.createTempDirectory("paperboy-courier").toFile()
    private var clock = Instant.ofEpochSecond(1_795_377_909)
    private val token = PushToken.Fcm("cAbC-12:APA91b_x")
    private val courier = ReceiptCourier(PaperboyApiClient(server.url, "pb_test", 5.0), ReceiptOutboxFile(File(folder, "receipts.json")), { clock }, { 0.0 })
    private fun receipt(edition: String) = ReceiptReport(edition, ReceiptResult.NEW_DATA, 100, 1.0, wave = 1, secondsFromPush = 3.0)

    @After
    fun stop() {
        server.close()
        folder.deleteRecursively()
    }

    @Test
    fun `without a registration nothing is sent - after it, the waiting receipts go oldest first`() {
        server.handler = { request, exchange -> FakeServer.respond(exchange, 201, request.text) }
        assertTrue(courier.post(receipt("e1")).isEmpty())
        assertTrue(courier.post(receipt("e2")).isEmpty())
        val deliveries = courier.registered(token)
        assertEquals(listOf("e1", "e2"), deliveries.map { it.receipt.editionId })
        assertTrue(deliveries.all { it.verdict == ReceiptOutbox.Verdict.DELIVERED })
        assertEquals(listOf("e1", "e2"), server.requests.map { Json.parse(it.text).obj()["editionId"] })
        assertTrue(server.requests.all { it.path == "/v1/devices/cAbC-12%3AAPA91b_x/receipts" })
        assertTrue(courier.pending.isEmpty())
    }

    @Test
    fun `404 naming the token keeps everything until the next registration, then it goes`() {
        var registered = false
        server.handler = { request, exchange ->
            if (registered) FakeServer.respond(exchange, 201, request.text) else FakeServer.error(exchange, 404, "not_found", "token")
        }
        courier.registered(token)
        assertEquals(ReceiptOutbox.Verdict.KEPT, courier.post(receipt("e1")).single().verdict)
        clock = clock.plusSeconds(86_400)
        assertTrue("waits for a registration, however long", courier.flush().isEmpty())
        registered = true
        assertEquals(ReceiptOutbox.Verdict.DELIVERED, courier.registered(token).single().verdict)
    }

    @Test
    fun `401 stops sending in this process - a new courier (a new app version) sends again`() {
        server.handler = { _, exchange -> FakeServer.error(exchange, 401, "unauthorized", "X-API-Key") }
        courier.registered(token)
        assertEquals(ApiReaction.StopUntilNewKey, courier.post(receipt("e1")).single().error!!.reaction)
        clock = clock.plusSeconds(3_600)
        assertTrue(courier.post(receipt("e2")).isEmpty())
        assertEquals(1, server.requests.size)
        server.handler = { request, exchange -> FakeServer.respond(exchange, 201, request.text) }
        val next = ReceiptCourier(PaperboyApiClient(server.url, "pb_new", 5.0), ReceiptOutboxFile(File(folder, "receipts.json")), { clock }, { 0.0 })
        assertEquals(listOf("e1", "e2"), next.flush().map { it.receipt.editionId })
    }

    @Test
    fun `429 pauses every receipt for Retry-After plus a second and the jitter - 5xx backs off 30 s`() {
        var status = 429
        server.handler = { request, exchange ->
            when (status) {
                429 -> FakeServer.error(exchange, 429, "rate_limited", null, mapOf("Retry-After" to "10"))
                503 -> FakeServer.respond(exchange, 503, "")
                else -> FakeServer.respond(exchange, 200, request.text)
            }
        }
        courier.registered(token)
        courier.post(receipt("e1"))
        clock = clock.plusSeconds(10)
        assertTrue("paused: 10 + 1 + 0 s", courier.post(receipt("e2")).isEmpty())
        clock = clock.plusSeconds(1)
        status = 503
        assertEquals(ReceiptOutbox.Verdict.KEPT, courier.flush().single().verdict)
        clock = clock.plusSeconds(29)
        assertTrue(courier.flush().isEmpty())
        clock = clock.plusSeconds(1)
        status = 200
        assertEquals(listOf("e1", "e2"), courier.flush().map { it.receipt.editionId })
        assertEquals(4, server.requests.size)
    }

    @Test
    fun `a receipt the server cannot take (400) is dropped and the next one goes`() {
        server.handler = { request, exchange ->
            if (Json.parse(request.text).obj()["editionId"] == "bad") FakeServer.error(exchange, 400, "invalid_value", "wave")
            else FakeServer.respond(exchange, 201, request.text)
        }
        courier.post(receipt("bad"))
        courier.post(receipt("e1"))
        val deliveries = courier.registered(token)
        assertEquals(listOf(ReceiptOutbox.Verdict.DROPPED, ReceiptOutbox.Verdict.DELIVERED), deliveries.map { it.verdict })
    }
    @Test
    fun `two couriers of one file in one process never post the same receipt at once (a flush while another's request is out)`() {
        val inside = java.util.concurrent.CountDownLatch(1)
        val release = java.util.concurrent.CountDownLatch(1)
        val posts = java.util.concurrent.atomic.AtomicInteger()
        val sender = object : ReceiptSender {
            override fun postReceipt(receipt: ReceiptReport, token: PushToken): Pair<StoredReceipt, Boolean> {
                posts.incrementAndGet()
                inside.countDown()
                release.await(5, java.util.concurrent.TimeUnit.SECONDS)
                throw PaperboyApiException(null, detail = "stand-in: no answer (kept, backing off)")
            }
        }
        val file = ReceiptOutboxFile(File(folder, "shared.json"))
        file.update { it.token = token; it.outbox.add(receipt("e1"), clock) }
        // The glue makes a courier per call (the open reporter, the periodic worker, the edition job): one file.
        val first = ReceiptCourier(sender, file, { clock }, { 0.0 })
        val second = ReceiptCourier(sender, ReceiptOutboxFile(File(folder, "shared.json")), { clock }, { 0.0 })
        val one = Thread { first.flush() }
        one.start()
        assertTrue(inside.await(5, java.util.concurrent.TimeUnit.SECONDS))
        val two = Thread { second.flush() }
        two.start()
        two.join(500)
        release.countDown()
        one.join(5_000)
        two.join(5_000)
        assertEquals("one request for e1 at a time", 1, posts.get())
    }
}
