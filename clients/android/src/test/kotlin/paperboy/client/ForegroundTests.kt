package paperboy.client

import org.junit.After
import org.junit.Assert.assertEquals
import org.junit.Assert.assertFalse
import org.junit.Assert.assertTrue
import org.junit.Test
import java.io.File
import java.nio.file.Files
import java.time.Instant

/**
 * Foregrounding (docs/app-integration.md, section 12; `ReceiptCourier.onForeground` in the Swift client): the outbox
 * first, its failure backoff lifted, then the open report; no report while a success receipt still waits.
 */
class ForegroundTests {
    private val server = FakeServer()
    private val folder: File = Files.createTempDirectory("paperboy-foreground").toFile()
    private var clock = Instant.ofEpochSecond(1_795_377_909)
    private val token = PushToken.Fcm("cAbC-12:APA91b_x")
    private val api = PaperboyApiClient(server.url, "pb_test", 5.0)
    private val courier = ReceiptCourier(api, ReceiptOutboxFile(File(folder, "receipts.json")), { clock }, { 0.0 })
    private fun receipt(edition: String) = ReceiptReport(edition, ReceiptResult.NEW_DATA, 100, 1.0, wave = 1, secondsFromPush = 3.0)
    private val calls: List<String> get() = server.requests.map { "${it.method} ${it.path.substringAfterLast('/')}" }

    @After
    fun stop() {
        server.close()
        folder.deleteRecursively()
    }

    @Test
    fun `the outbox goes first, its failure backoff lifted, then the open report`() {
        var receipts = 503
        server.handler = { request, exchange ->
            if (request.path.endsWith("/opens")) FakeServer.respond(exchange, 204, "")
            else if (receipts == 503) FakeServer.respond(exchange, 503, "")
            else FakeServer.respond(exchange, 201, request.text)
        }
        courier.registered(token)
        assertEquals(ReceiptOutbox.Verdict.KEPT, courier.post(receipt("e1")).single().verdict)
        receipts = 201
        clock = clock.plusSeconds(5)  // within the 30 s backoff: the reader is here, it goes all the same
        val foregrounding = courier.onForeground { api.reportOpen(it) }
        assertEquals(listOf("e1"), foregrounding.deliveries.map { it.receipt.editionId })
        assertTrue(foregrounding.openReported)
        assertEquals(listOf("POST receipts", "POST receipts", "POST opens"), calls)
        assertTrue(courier.pending.isEmpty())
    }

    @Test
    fun `a success receipt that still cannot go (429) drops the open report - sent, it would count the edition missing`() {
        server.handler = { request, exchange ->
            if (request.path.endsWith("/opens")) FakeServer.respond(exchange, 204, "")
            else FakeServer.error(exchange, 429, "rate_limited", null, mapOf("Retry-After" to "60"))
        }
        courier.registered(token)
        courier.post(receipt("e1"))
        clock = clock.plusSeconds(5)
        val foregrounding = courier.onForeground { api.reportOpen(it) }
        assertTrue("a 429's pause holds on foregrounding", foregrounding.deliveries.isEmpty())
        assertFalse(foregrounding.openReported)
        assertEquals(listOf("POST receipts"), calls)
    }

    @Test
    fun `with nothing waiting the report goes - an error is dropped, never sent later`() {
        server.handler = { _, exchange -> FakeServer.respond(exchange, 503, "") }
        courier.registered(token)
        assertFalse(courier.onForeground { api.reportOpen(it) }.openReported)
        assertEquals(listOf("POST opens"), calls)
        server.handler = { _, exchange -> FakeServer.respond(exchange, 204, "") }
        assertTrue(courier.onForeground { api.reportOpen(it) }.openReported)
        assertEquals(listOf("POST opens", "POST opens"), calls)
    }

    @Test
    fun `without a registered token nothing is reported`() {
        server.handler = { _, exchange -> FakeServer.respond(exchange, 204, "") }
        assertFalse(courier.onForeground { api.reportOpen(it) }.openReported)
        assertTrue(server.requests.isEmpty())
    }
}
