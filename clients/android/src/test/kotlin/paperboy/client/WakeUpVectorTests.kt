package paperboy.client

import org.junit.Assert.assertEquals
import org.junit.Assert.assertFalse
import org.junit.Assert.assertNull
import org.junit.Assert.assertTrue
import org.junit.Assert.fail
import org.junit.Test
import java.time.Instant

/** Decoding the FCM data the server sends (the vectors), and refusing what it must not send. */
class WakeUpVectorTests {
    private val fcmFiles = Vectors.files("pushes", "fcm-android-") + Vectors.files("pushes", "fcm-ios-")

    @Test
    fun `every FCM message of the vectors decodes to its wakeUp`() {
        assertTrue("the vectors hold the FCM messages", fcmFiles.size >= 5)
        for (path in fcmFiles) {
            val vector = Vectors.load(path)
            val message = vector["message"].obj()
            val expected = vector["wakeUp"].obj()
            val wakeUp = EditionWakeUp.decode(message["data"].strings(), isAlert = message.containsKey("notification"))
                ?: throw AssertionError("$path: not an edition's push")
            assertEquals(path, expected["edition"], wakeUp.editionId)
            assertEquals(path, expected["manifest"], wakeUp.manifestPath)
            assertEquals(path, expected["tier"], wakeUp.tier.wire)
            assertEquals(path, Instant.ofEpochSecond(expected["deadline"].long()), wakeUp.deadline)
            assertEquals(path, expected["fetch"], wakeUp.fetch)
            assertEquals(path, expected["wave"].int(), wakeUp.wave)
            assertEquals(path, expected["sentAt"]?.let { Instant.ofEpochSecond(it.long()) }, wakeUp.sentAt)
            val limits = expected["extension"]?.obj()
            assertEquals(path, limits?.let { EditionWakeUp.ExtensionLimits(it["seconds"].int(), it["megabytes"].int()) }, wakeUp.extensionLimits)
            assertEquals(path, expected["isAlert"], wakeUp.isAlert)
        }
    }

    @Test
    fun `a push to a tier the edition lacks has an empty fetch, and the manifest's plan falls back`() {
        val vector = Vectors.load("pushes/fcm-android-background-medium-fallback.json")
        val wakeUp = EditionWakeUp.decode(vector["message"].obj()["data"].strings())!!
        assertTrue(wakeUp.fetch.isEmpty())
        val edition = Vectors.load(vector["build"].obj()["edition"] as String)["edition"].obj()
        val plan = EditionManifest.from(edition).plan(wakeUp.tier)!!
        assertEquals(ImageTier.SMALL, plan.tier)
        assertTrue(plan.fellBack)
    }

    @Test
    fun `malformed data is refused naming its key - another message is not ours`() {
        val vector = Vectors.load("pushes/fcm-data-refused.json")
        for (case in vector["cases"].list().map { it.obj() }) {
            try {
                EditionWakeUp.decode(case["data"].strings())
                fail("${case["name"]}: decoded")
            } catch (error: WakeUpException) {
                assertEquals("${case["name"]}: ${error.message}", case["refusal"], error.key)
            }
        }
        for (data in vector["notOurs"].list()) assertNull(EditionWakeUp.decode(data.strings()))
        for (case in vector["accepted"].list().map { it.obj() }) {
            assertEquals(case["name"] as String, case["edition"], EditionWakeUp.decode(case["data"].strings())!!.editionId)
        }
    }

    @Test
    fun `secondsFromPush counts from sentAt, else the arrival - 0 for a clock behind, at most a day, half away from zero`() {
        val base = EditionWakeUp.decode(Vectors.load("pushes/fcm-android-background-large.json")["message"].obj()["data"].strings())!!
        for (case in Vectors.load("receipts.json")["secondsFromPush"].list().map { it.obj() }) {
            val wakeUp = base.copy(sentAt = (case["sentAt"] as String?)?.let { Rfc3339.parse(it) })
            val seconds = wakeUp.secondsFromPush(epoch(case["arrival"]), epoch(case["now"]))
            assertEquals(case["name"] as String, case["secondsFromPush"].double(), seconds, 0.0)
        }
    }

    @Test
    fun `onMessage - high priority is expedited, one unique work per edition, and the worker gets the push back`() {
        val data = Vectors.load("pushes/fcm-android-background-medium-fallback.json")["message"].obj()["data"].strings()
        val arrived = Instant.ofEpochSecond(1_795_379_710)
        val decision = EditionWork.onMessage(data, highPriority = true, isAlert = false, arrivedAt = arrived) as EditionWork.OnMessage.Enqueue
        assertTrue(decision.expedited)
        assertEquals("paperboy-edition-0b4ed6a3-3c2e-4b8e-9a55-0d2f3f1b7c11", decision.uniqueName)
        val queued = EditionWork.queued(decision.inputData)
        assertEquals(decision.wakeUp, queued.wakeUp)
        assertEquals(arrived, queued.arrivedAt)
        assertTrue(queued.highPriority)
        val normal = EditionWork.onMessage(data, highPriority = false, isAlert = false, arrivedAt = arrived) as EditionWork.OnMessage.Enqueue
        assertFalse(normal.expedited)
        assertEquals(decision.uniqueName, normal.uniqueName)
    }

    @Test
    fun `onMessage - not ours, malformed, or already past its deadline (held by Doze) enqueues nothing`() {
        val data = Vectors.load("pushes/fcm-android-background-large.json")["message"].obj()["data"].strings()
        assertEquals(EditionWork.OnMessage.NotOurs, EditionWork.onMessage(mapOf("article" to "1"), false, false, Instant.EPOCH))
        val malformed = EditionWork.onMessage(data + ("wave" to "two"), false, false, Instant.EPOCH)
        assertEquals("wave", (malformed as EditionWork.OnMessage.Malformed).error.key)
        val late = EditionWork.onMessage(data, true, false, Instant.ofEpochSecond(1_795_392_000))
        assertTrue(late is EditionWork.OnMessage.Expired)
    }

    @Test
    fun `the alert last resort handed over in front enqueues the download of the device's own tier`() {
        val message = Vectors.load("pushes/fcm-android-alert-last-resort.json")["message"].obj()
        val decision = EditionWork.onMessage(message["data"].strings(), highPriority = true, isAlert = true, arrivedAt = Instant.ofEpochSecond(1_795_385_110))
        decision as EditionWork.OnMessage.Enqueue
        assertEquals(ImageTier.LARGE, decision.wakeUp.tier)
        assertTrue(EditionWork.queued(decision.inputData).wakeUp.isAlert)
    }

    @Test
    fun `setForeground only right after a high-priority message`() {
        val data = Vectors.load("pushes/fcm-android-background-large.json")["message"].obj()["data"].strings()
        val wakeUp = EditionWakeUp.decode(data)!!
        val arrived = Instant.ofEpochSecond(1_795_377_910)
        val high = EditionWork.Queued(wakeUp, arrived, highPriority = true)
        assertTrue(EditionWork.mayStartForeground(high, arrived.plusSeconds(2)))
        assertTrue(EditionWork.mayStartForeground(high, arrived.plusSeconds(10)))
        assertFalse("the exemption is short", EditionWork.mayStartForeground(high, arrived.plusSeconds(11)))
        assertFalse("a clock set back", EditionWork.mayStartForeground(high, arrived.minusSeconds(1)))
        assertFalse(EditionWork.mayStartForeground(high.copy(highPriority = false), arrived.plusSeconds(1)))
    }

    @Test
    fun `a worker downloads for 9 minutes in the background, until the deadline in the foreground`() {
        val wakeUp = EditionWakeUp.decode(Vectors.load("pushes/fcm-android-background-large.json")["message"].obj()["data"].strings())!!
        val start = Instant.ofEpochSecond(1_795_377_910)
        assertEquals(start.plusSeconds(540), EditionWork.workUntil(wakeUp, start, foreground = false))
        assertEquals(wakeUp.deadline, EditionWork.workUntil(wakeUp, start, foreground = true))
        assertEquals(wakeUp.deadline, EditionWork.workUntil(wakeUp, wakeUp.deadline.minusSeconds(60), foreground = false))
    }
}
