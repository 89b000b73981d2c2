package paperboy.client

import org.junit.Assert.assertEquals
import org.junit.Assert.assertFalse
import org.junit.Assert.assertNull
import org.junit.Assert.assertTrue
import org.junit.Test
import java.time.Instant

/** What the glue decides by API level and outcome, on the JVM. */
class AndroidRulesTests {
    @Test
    fun `POST_NOTIFICATIONS is asked for on Android 13 and later only, when not granted`() {
        assertTrue(AndroidRules.mustAskForNotifications(33, granted = false))
        assertFalse(AndroidRules.mustAskForNotifications(33, granted = true))
        assertFalse(AndroidRules.mustAskForNotifications(32, granted = false))
    }

    @Test
    fun `the receipt's network and background refresh from the system's answers`() {
        assertEquals(Network.NONE, AndroidRules.network(active = false, wifi = false, ethernet = false, cellular = false))
        assertEquals(Network.WIFI, AndroidRules.network(active = true, wifi = true, ethernet = false, cellular = true))
        assertEquals(Network.WIFI, AndroidRules.network(active = true, wifi = false, ethernet = true, cellular = false))
        assertEquals(Network.CELLULAR, AndroidRules.network(active = true, wifi = false, ethernet = false, cellular = true))
        assertNull(AndroidRules.network(active = true, wifi = false, ethernet = false, cellular = false))
        assertEquals(false, AndroidRules.backgroundRefresh(28, backgroundRestricted = true))
        assertNull(AndroidRules.backgroundRefresh(27, backgroundRestricted = false))
    }

    @Test
    fun `an edition's work retries a failure twice, an unfinished run always, and is done otherwise`() {
        val failed = EditionJob.Outcome.Failed("bundle 0: reset", retry = true)
        assertEquals(EditionWork.Verdict.RETRY, EditionWork.verdict(failed, 0))
        assertEquals(EditionWork.Verdict.RETRY, EditionWork.verdict(failed, 1))
        assertEquals(EditionWork.Verdict.SUCCESS, EditionWork.verdict(failed, 2))
        assertEquals(EditionWork.Verdict.SUCCESS, EditionWork.verdict(failed.copy(retry = false), 0))
        assertEquals(EditionWork.Verdict.RETRY, EditionWork.verdict(EditionJob.Outcome.Unfinished(1), 7))
        assertEquals(EditionWork.Verdict.SUCCESS, EditionWork.verdict(EditionJob.Outcome.Expired, 0))
        assertEquals(EditionWork.Verdict.SUCCESS, EditionWork.verdict(EditionJob.Outcome.AlreadyHeld, 0))
    }

    @Test
    fun `a registration is retried on no answer, 5xx or 429, given up on a refusal or a revoked key`() {
        assertEquals(EditionWork.Verdict.SUCCESS, EditionWork.registrationVerdict(ApiReaction.to(201, null, null)))
        assertEquals(EditionWork.Verdict.RETRY, EditionWork.registrationVerdict(ApiReaction.toNoAnswer()))
        assertEquals(EditionWork.Verdict.RETRY, EditionWork.registrationVerdict(ApiReaction.to(503, null, null)))
        assertEquals(EditionWork.Verdict.RETRY, EditionWork.registrationVerdict(ApiReaction.to(429, null, 5)))
        assertEquals(EditionWork.Verdict.FAILURE, EditionWork.registrationVerdict(ApiReaction.to(400, "tier", null)))
        assertEquals(EditionWork.Verdict.FAILURE, EditionWork.registrationVerdict(ApiReaction.to(401, "X-API-Key", null)))
        val old = PushToken.Fcm("old:APA91b")
        val new = PushToken.Fcm("new:APA91b")
        assertEquals(old, EditionWork.previousTokenToRemove(old, new))
        assertNull(EditionWork.previousTokenToRemove(new, new))
        assertNull(EditionWork.previousTokenToRemove(null, new))
    }

    @Test
    fun `a tap on the alert last resort downloads at once, expedited, the device's own tier`() {
        val data = Vectors.load("pushes/fcm-android-alert-last-resort.json")["message"].obj()["data"].strings()
        val decision = EditionWork.onNotificationTap(data, Instant.ofEpochSecond(1_795_386_000)) as EditionWork.OnMessage.Enqueue
        assertTrue(decision.expedited)
        assertFalse(EditionWork.queued(decision.inputData).highPriority)
        assertEquals(ImageTier.LARGE, decision.wakeUp.tier)
        assertEquals(EditionWork.OnMessage.NotOurs, EditionWork.onNotificationTap(mapOf("from" to "launcher"), Instant.EPOCH))
    }
}
