package paperboy.client

import org.junit.After
import org.junit.Assert.assertEquals
import org.junit.Assert.assertTrue
import org.junit.Assert.fail
import org.junit.Test

/**
 * The Android counterparts of the Swift client's fixes: numbers from a push bounded where decoded, no redirect
 * followed by an API call, a token's path segment ASCII.
 */
class BoundsTests {
    private val server = FakeServer()
    private val data = mapOf(
        "edition" to "0b4ed6a3-3c2e-4b8e-9a55-0d2f3f1b7c11",
        "manifest" to "/v1/editions/0b4ed6a3-3c2e-4b8e-9a55-0d2f3f1b7c11",
        "tier" to "large",
        "deadline" to "2026-11-23T09:00:00+09:00",
        "fetch" to "[\"https://cdn.example.com/2026-11-23/morning/large-1.zip\"]",
        "wave" to "1",
        "sentAt" to "2026-11-22T20:05:09Z"
    )

    @After
    fun stop() = server.close()

    @Test
    fun `the extension's seconds and megabytes are cut to what iOS gives (30 s, 24 MB), never below 0`() {
        val big = EditionWakeUp.decode(data + ("extension" to "{\"seconds\": 86400, \"megabytes\": 4096}"))!!
        assertEquals(EditionWakeUp.ExtensionLimits(30, 24), big.extensionLimits)
        val negative = EditionWakeUp.decode(data + ("extension" to "{\"seconds\": -5, \"megabytes\": 0}"))!!
        assertEquals(EditionWakeUp.ExtensionLimits(0, 0), negative.extensionLimits)
    }

    @Test
    fun `a wave outside 1 to 32767 is refused, naming wave (already so)`() {
        for (wave in listOf("0", "-1", "32768", "9223372036854775807")) {
            try {
                EditionWakeUp.decode(data + ("wave" to wave))
                fail("wave $wave decoded")
            } catch (error: WakeUpException) {
                assertEquals("wave", error.key)
            }
        }
    }

    @Test
    fun `an API call follows no redirect (another host) - the 307 is the answer (already so)`() {
        server.handler = { request, exchange ->
            if (request.path.endsWith("/opens")) FakeServer.respond(exchange, 307, "", mapOf("Location" to server.url.replace("127.0.0.1", "localhost") + "/landed"))
            else FakeServer.respond(exchange, 204, "")
        }
        try {
            PaperboyApiClient(server.url, "pb_test", 5.0).reportOpen(PushToken.Fcm("t"))
            fail("followed the redirect")
        } catch (error: PaperboyApiException) {
            assertEquals(307, error.status)
        }
        assertEquals(listOf("/v1/devices/t/opens"), server.requests.map { it.path })
    }

    @Test
    fun `a token's path segment is ASCII, every other UTF-8 byte escaped (already so)`() {
        assertEquals("jeton-%C3%A9%3A%C3%BC_1", PushToken.Fcm("jeton-é:ü_1").pathSegment)
        assertEquals("%E6%95%B0%E5%AD%97%D9%A3", PushToken.Fcm("数字٣").pathSegment)
        assertTrue(PushToken.Fcm("数字").pathSegment.all { it.toInt() < 128 })
    }
}
