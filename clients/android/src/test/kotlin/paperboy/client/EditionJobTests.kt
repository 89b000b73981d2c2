package paperboy.client

import org.junit.After
import org.junit.Assert.assertEquals
import org.junit.Assert.assertFalse
import org.junit.Assert.assertTrue
import org.junit.Test
import java.io.File
import java.nio.file.Files
import java.io.ByteArrayInputStream
import java.time.Instant

/**
 * A worker's run against a local server that serves Paperboy's API and the CDN: the edition's manifest, its bundles
 * (with ranges), the receipts.
 */
class EditionJobTests {
    private val server = FakeServer()
    private val folder: File = Files.createTempDirectory("paperboy-job").toFile()
    private val editionId = "0b4ed6a3-3c2e-4b8e-9a55-0d2f3f1b7c11"
    private val sentAt = Instant.ofEpochSecond(1_795_377_909)
    private var clock = sentAt.plusSeconds(60)
    private val bundles = mapOf(
        "/cdn/small-1.zip" to ByteArray(70_000) { (it % 251).toByte() },
        "/cdn/large-1.zip" to ByteArray(200_000) { (it % 253).toByte() },
        "/cdn/large-2.zip" to ByteArray(150_001) { (it % 127).toByte() }
    )
    /** Bundles served with another content than published (a corrupt CDN copy). */
    private val corrupt = HashSet<String>()
    private val api = PaperboyApiClient(server.url, "pb_test", 5.0)
    private val courier = ReceiptCourier(api, ReceiptOutboxFile(File(folder, "receipts.json")), { clock }, { 0.0 })
    private val job = EditionJob(api, courier, File(folder, "editions"), BundleDownloader()) { clock }

    private fun sha(bytes: ByteArray) = BundleCheck.sha256(ByteArrayInputStream(bytes))

    private fun manifest(): String {
        fun tier(vararg paths: String) = mapOf("bundles" to paths.map { mapOf("url" to server.url + it, "bytes" to bundles.getValue(it).size, "sha256" to sha(bundles.getValue(it))) })
        return Json.write(linkedMapOf(
            "id" to editionId, "appId" to 1, "publication" to "morning", "issueDate" to "2026-11-23", "deadline" to "2026-11-23T09:00:00+09:00",
            "tiers" to mapOf("small" to tier("/cdn/small-1.zip"), "large" to tier("/cdn/large-1.zip", "/cdn/large-2.zip")),
            "pages" to listOf(mapOf("number" to 1)), "publishedAt" to "2026-11-22T19:58:41.000Z"))
    }

    private fun wakeUp(tier: String): EditionWakeUp {
        val data = Vectors.load("pushes/fcm-android-background-large.json")["message"].obj()["data"].strings()
        return EditionWakeUp.decode(data + ("tier" to tier))!!
    }

    private fun receipts() = server.requests.filter { it.path.endsWith("/receipts") }.map { Json.parse(it.text).obj() }

    init {
        server.handler = { request, exchange ->
            when {
                request.path == "/v1/editions/$editionId" -> FakeServer.respond(exchange, 200, manifest())
                request.path.endsWith("/receipts") -> FakeServer.respond(exchange, 201, request.text)
                bundles.containsKey(request.path) -> {
                    var bytes = bundles.getValue(request.path)
                    if (request.path in corrupt) bytes = bytes.copyOf().also { it[it.size / 2] = (it[it.size / 2] + 1).toByte() }
                    val range = request.headers["range"]
                    if (range != null) {
                        val from = range.removePrefix("bytes=").removeSuffix("-").toInt()
                        exchange.responseHeaders.add("Content-Range", "bytes $from-${bytes.size - 1}/${bytes.size}")
                        exchange.sendResponseHeaders(206, (bytes.size - from).toLong())
                        exchange.responseBody.use { it.write(bytes, from, bytes.size - from) }
                    } else {
                        exchange.sendResponseHeaders(200, bytes.size.toLong())
                        exchange.responseBody.use { it.write(bytes) }
                    }
                }
                else -> FakeServer.respond(exchange, 404, "")
            }
        }
        courier.registered(PushToken.Fcm("cAbC-12:APA91b_x"))
    }

    @After
    fun stop() {
        server.close()
        folder.deleteRecursively()
    }

    @Test
    fun `the device's tier is downloaded, checked, placed, and newData posted with its bytes and wave`() {
        val outcome = job.run(wakeUp("large"), clock, clock.plusSeconds(540), DeviceContext(Network.WIFI, true, false, true))
        assertEquals(350_001L, (outcome as EditionJob.Outcome.Downloaded).bytesThisRun)
        assertEquals(ImageTier.LARGE, outcome.plan.tier)
        assertTrue(job.isHeld(editionId))
        assertTrue(File(folder, "editions/$editionId/1.bundle").readBytes().contentEquals(bundles.getValue("/cdn/large-2.zip")))
        val receipt = receipts().single()
        assertEquals("newData", receipt["result"])
        assertEquals(350_001L, receipt["bytes"].long())
        assertEquals(1, receipt["wave"].int())
        assertEquals(60.0, receipt["secondsFromPush"].double(), 0.0)
        assertEquals("wifi", receipt["network"])
    }

    @Test
    fun `a tier the edition lacks falls back to the nearest smaller one`() {
        val outcome = job.run(wakeUp("medium"), clock, clock.plusSeconds(540)) as EditionJob.Outcome.Downloaded
        assertEquals(ImageTier.SMALL, outcome.plan.tier)
        assertTrue(outcome.plan.fellBack)
        assertTrue(server.requests.any { it.path == "/cdn/small-1.zip" })
    }

    @Test
    fun `a bundle whose checksum does not match is refused - failed posted, nothing held, the next run starts over`() {
        corrupt.add("/cdn/large-2.zip")
        val outcome = job.run(wakeUp("large"), clock, clock.plusSeconds(540))
        assertTrue(outcome is EditionJob.Outcome.Failed)
        assertFalse(job.isHeld(editionId))
        assertFalse(File(folder, "editions/$editionId/1.bundle").exists())
        assertFalse(File(folder, "editions/$editionId/1.part").exists())
        assertEquals("failed", receipts().single()["result"])
        corrupt.clear()
        clock = clock.plusSeconds(1_800)
        assertTrue(job.run(wakeUp("large"), clock, clock.plusSeconds(540)) is EditionJob.Outcome.Downloaded)
        assertEquals("a success replaces the failed receipt", "newData", receipts().last()["result"])
        assertEquals("the checked first bundle is not fetched again", 1, server.requests.count { it.path == "/cdn/large-1.zip" })
    }

    @Test
    fun `a partial file is resumed with a range`() {
        val part = File(folder, "editions/$editionId/0.part")
        part.parentFile.mkdirs()
        part.writeBytes(bundles.getValue("/cdn/small-1.zip").copyOf(30_000))
        val outcome = job.run(wakeUp("small"), clock, clock.plusSeconds(540)) as EditionJob.Outcome.Downloaded
        assertEquals(40_000L, outcome.bytesThisRun)
        assertEquals("bytes=30000-", server.requests.single { it.path == "/cdn/small-1.zip" }.headers["range"])
    }

    @Test
    fun `after the deadline nothing is downloaded or posted - an edition held already answers noData`() {
        clock = Instant.ofEpochSecond(1_795_392_000)
        assertEquals(EditionJob.Outcome.Expired, job.run(wakeUp("large"), clock, clock.plusSeconds(540)))
        assertTrue(receipts().isEmpty())
        clock = sentAt.plusSeconds(60)
        job.run(wakeUp("small"), clock, clock.plusSeconds(540))
        assertEquals(EditionJob.Outcome.AlreadyHeld, job.run(wakeUp("small"), clock, clock.plusSeconds(540)))
        assertEquals(listOf("newData", "noData"), receipts().map { it["result"] })
    }

    @Test
    fun `the worker's time running out leaves the rest for the next run, with nothing posted`() {
        val outcome = job.run(wakeUp("large"), clock, clock)
        assertEquals(EditionJob.Outcome.Unfinished(0), outcome)
        assertTrue(receipts().isEmpty())
    }
}
