package paperboy.client

import org.junit.After
import org.junit.Assert.assertEquals
import org.junit.Assert.assertNull
import org.junit.Assert.assertTrue
import org.junit.Assert.fail
import org.junit.Test

/** The HTTP client against a local fake server: the requests it makes, the errors it reads, its hard deadlines. */
class ApiClientTests {
    private val server = FakeServer()
    private val token = PushToken.Fcm("cAbC-12:APA91b_x")

    @After
    fun stop() = server.close()

    private fun failure(call: () -> Unit): PaperboyApiException {
        try {
            call()
        } catch (error: PaperboyApiException) {
            return error
        }
        throw AssertionError("the call succeeded")
    }

    @Test
    fun `register PUTs the registration body with the key, the token escaped, and reads 201 as created`() {
        val device = """{"token": "cAbC-12:APA91b_x", "provider": "fcm", "platform": "android", "environment": "production",
            "subscriptions": ["morning"], "timeZone": "Asia/Tokyo", "tier": "medium", "autoDownload": true, "alertsAuthorized": true,
            "notifyWhenReady": false, "active": true, "registeredAt": "2026-11-20T21:14:03Z", "updatedAt": "2026-11-20T21:14:03Z"}"""
        server.handler = { _, exchange -> FakeServer.respond(exchange, 201, device) }
        val registration = DeviceRegistration(DeviceRegistration.Route.Fcm(DeviceRegistration.Platform.ANDROID), listOf("morning"), "Asia/Tokyo",
            ImageTier.MEDIUM, alertsAuthorized = true, osVersion = "14", model = "Pixel 8")
        val (stored, created) = PaperboyApiClient(server.url + "/", "pb_test").register(token, registration)
        assertTrue(created)
        assertEquals(ImageTier.MEDIUM, stored.tier)
        val request = server.requests.single()
        assertEquals("PUT", request.method)
        assertEquals("/v1/devices/cAbC-12%3AAPA91b_x", request.path)
        assertEquals("pb_test", request.headers["x-api-key"])
        assertEquals("application/json", request.headers["content-type"])
        assertTrue(Json.equivalent(Json.parse(registration.toJson()), Json.parse(request.text)))
    }

    @Test
    fun `each error status gives the field, Retry-After and the guide's reaction`() {
        val cases = listOf(
            Triple(400, "tier", ApiReaction.Drop), Triple(401, "X-API-Key", ApiReaction.StopUntilNewKey),
            Triple(404, "token", ApiReaction.RegisterThenRetry), Triple(404, "editionId", ApiReaction.Drop),
            Triple(409, "editionId", ApiReaction.RetryLater), Triple(410, null, ApiReaction.Drop),
            Triple(413, "body", ApiReaction.Drop), Triple(500, null, ApiReaction.RetryLater), Triple(503, null, ApiReaction.RetryLater)
        )
        val api = PaperboyApiClient(server.url, "pb_test")
        for ((status, field, reaction) in cases) {
            server.handler = { _, exchange -> FakeServer.error(exchange, status, "some_code", field) }
            val error = failure { api.postReceipt(ReceiptReport("0b4ed6a3-3c2e-4b8e-9a55-0d2f3f1b7c11", ReceiptResult.NEW_DATA), token) }
            assertEquals(status, error.status)
            assertEquals(field, error.field)
            assertEquals("$status $field", reaction, error.reaction)
        }
        server.handler = { _, exchange -> FakeServer.error(exchange, 429, "rate_limited", null, mapOf("Retry-After" to "7")) }
        assertEquals(ApiReaction.RetryAfter(7), failure { api.reportOpen(token) }.reaction)
        server.handler = { _, exchange -> FakeServer.respond(exchange, 502, "") }
        val proxy = failure { api.reportOpen(token) }
        assertEquals(502, proxy.status)
        assertNull(proxy.code)
        assertEquals(ApiReaction.RetryLater, proxy.reaction)
    }

    @Test
    fun `the open report is a POST without a body, answered 204`() {
        server.handler = { _, exchange -> FakeServer.respond(exchange, 204, "") }
        PaperboyApiClient(server.url, "pb_test").reportOpen(token)
        val request = server.requests.single()
        assertEquals("POST", request.method)
        assertEquals("/v1/devices/cAbC-12%3AAPA91b_x/opens", request.path)
        assertEquals(0, request.body.size)
        assertEquals("0", request.headers["content-length"])
    }

    @Test
    fun `the manifest at the push's path is read and parsed`() {
        val edition = Json.write(Vectors.load("editions/morning-small-large.json")["edition"])
        server.handler = { _, exchange -> FakeServer.respond(exchange, 200, edition) }
        val manifest = PaperboyApiClient(server.url, "pb_test").manifest("/v1/editions/0b4ed6a3-3c2e-4b8e-9a55-0d2f3f1b7c11")
        assertEquals(ImageTier.SMALL, manifest.plan(ImageTier.MEDIUM)!!.tier)
        server.handler = { _, exchange -> FakeServer.respond(exchange, 200, "{\"id\": 1}") }
        val refused = failure { PaperboyApiClient(server.url, "pb_test").manifest("/v1/editions/x") }
        assertNull("an answer that is not an edition counts as none", refused.status)
    }

    @Test
    fun `a server that never answers ends the call within its total deadline`() {
        server.handler = { _, _ -> Thread.sleep(10_000) }
        val api = PaperboyApiClient(server.url, "pb_test", timeoutSeconds = 1.0)
        val started = System.nanoTime()
        val error = failure { api.reportOpen(token) }
        val seconds = (System.nanoTime() - started) / 1e9
        assertNull(error.status)
        assertEquals(ApiReaction.RetryLater, error.reaction)
        assertTrue("ended after $seconds s", seconds >= 0.9 && seconds < 2.5)
    }

    @Test
    fun `a server that trickles its answer (each read within any idle timeout) still ends within the total deadline`() {
        server.handler = { _, exchange ->
            exchange.sendResponseHeaders(200, 1_000)
            exchange.responseBody.use { body ->
                for (index in 0 until 1_000) {
                    body.write(120)
                    body.flush()
                    Thread.sleep(100)
                }
            }
        }
        val api = PaperboyApiClient(server.url, "pb_test", timeoutSeconds = 1.5)
        val started = System.nanoTime()
        val error = failure { api.device(token) }
        val seconds = (System.nanoTime() - started) / 1e9
        assertNull(error.status)
        assertTrue("ended after $seconds s", seconds >= 1.4 && seconds < 3.0)
    }

    @Test
    fun `nothing listening is no answer, at once`() {
        val closed = FakeServer()
        val url = closed.url
        closed.close()
        val error = failure { PaperboyApiClient(url, "pb_test", timeoutSeconds = 5.0).reportOpen(token) }
        assertNull(error.status)
        assertEquals(ApiReaction.RetryLater, error.reaction)
    }

    @Test
    fun `latest edition escapes the publication in the query`() {
        server.handler = { _, exchange -> FakeServer.error(exchange, 404, "not_found", "publication") }
        val error = failure { PaperboyApiClient(server.url, "pb_test").latestEdition("morning & more") }
        assertEquals("/v1/editions/latest?publication=morning%20%26%20more", server.requests.single().path)
        assertEquals(ApiReaction.Drop, error.reaction)
        if (error.field != "publication") fail(error.message)
    }
}
