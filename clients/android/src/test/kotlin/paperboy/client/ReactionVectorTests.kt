package paperboy.client

import org.junit.Assert.assertEquals
import org.junit.Assert.assertNull
import org.junit.Test

/** The reaction to each answer of the API (the vectors), and reading the error body. */
class ReactionVectorTests {
    private fun named(reaction: ApiReaction): Pair<String, Int?> = when (reaction) {
        ApiReaction.Done -> Pair("done", null)
        ApiReaction.RegisterThenRetry -> Pair("registerThenRetry", null)
        ApiReaction.StopUntilNewKey -> Pair("stopUntilNewKey", null)
        is ApiReaction.RetryAfter -> Pair("retryAfter", reaction.seconds)
        ApiReaction.RetryLater -> Pair("retryLater", null)
        ApiReaction.Drop -> Pair("drop", null)
    }

    @Test
    fun `each status gets the vector's reaction, 400 to 5xx`() {
        val cases = Vectors.load("reactions.json")["cases"].list().map { it.obj() }
        val statuses = cases.mapNotNull { it["status"]?.int() }.toSet()
        for (status in listOf(400, 401, 404, 409, 410, 429, 500, 503)) org.junit.Assert.assertTrue("no vector for $status", status in statuses)
        for (case in cases) {
            val status = case["status"]?.int()
            val reaction = if (status == null) ApiReaction.toNoAnswer() else ApiReaction.to(status, case["field"] as String?, case["retryAfter"]?.int())
            assertEquals(case.toString(), Pair(case["reaction"], case["seconds"]?.int()), named(reaction))
        }
    }

    @Test
    fun `an error body gives the code, field and Retry-After - a proxy's page gives the status alone`() {
        val error = PaperboyApiException.fromAnswer(404, """{"error": {"code": "not_found", "field": "token", "message": "no device with this token is registered"}}""", null)
        assertEquals("not_found", error.code)
        assertEquals("token", error.field)
        assertEquals(ApiReaction.RegisterThenRetry, error.reaction)
        val limited = PaperboyApiException.fromAnswer(429, """{"error": {"code": "rate_limited", "message": "slow down"}}""", " 7 ")
        assertEquals(ApiReaction.RetryAfter(7), limited.reaction)
        val proxy = PaperboyApiException.fromAnswer(502, "<html>Bad Gateway</html>", null)
        assertNull(proxy.code)
        assertEquals(ApiReaction.RetryLater, proxy.reaction)
        assertEquals(ApiReaction.RetryLater, PaperboyApiException(null, detail = "offline").reaction)
    }
}
