package paperboy.client

import org.junit.Assert.assertEquals
import org.junit.Assert.assertNull
import org.junit.Assert.assertTrue
import org.junit.Test
import java.io.File
import java.nio.file.Files
import java.time.Instant
import java.util.concurrent.CountDownLatch
import java.util.concurrent.Executors
import java.util.concurrent.TimeUnit

/** The outbox's order and backoff (the vectors' scenarios, on an injected clock), and its file. */
class OutboxVectorTests {
    private val vector = Vectors.load("outbox.json")
    private val start = Instant.ofEpochSecond(vector["start"].long())

    private fun at(seconds: Any?): Instant = start.plusNanos((seconds as java.math.BigDecimal).movePointRight(9).toLong())

    private fun receipt(value: Any?): ReceiptReport {
        val spec = value.obj()
        val result = ReceiptResult.of(spec["result"] as String)!!
        return ReceiptReport(spec["edition"] as String, result, if (result == ReceiptResult.NEW_DATA) 1_000 else 0, 2.0, wave = 1, secondsFromPush = 5.0)
    }

    private fun verdict(name: Any?) = when (name) {
        "delivered" -> ReceiptOutbox.Verdict.DELIVERED
        "kept" -> ReceiptOutbox.Verdict.KEPT
        else -> ReceiptOutbox.Verdict.DROPPED
    }

    @Test
    fun `every scenario of the vectors holds step by step`() {
        val scenarios = vector["scenarios"].list().map { it.obj() }
        assertTrue(scenarios.size >= 7)
        for (scenario in scenarios) {
            var outbox = ReceiptOutbox()
            for ((index, stepValue) in scenario["steps"].list().withIndex()) {
                val step = stepValue.obj()
                val what = "${scenario["name"]}, step $index ($step)"
                when (step["op"]) {
                    "add" -> assertEquals(what, step["added"], outbox.add(receipt(step["receipt"]), at(step["at"])))
                    "due" -> {
                        val due = outbox.due(at(step["at"]))
                        if (step.containsKey("receipts")) assertEquals(what, step["receipts"].list().map { receipt(it) }, due)
                        if (step.containsKey("count")) assertEquals(what, step["count"].int(), due.size)
                        if (step.containsKey("first")) assertEquals(what, step["first"], due.first().editionId)
                    }
                    "record" -> {
                        val answer = step["answer"]?.obj()?.let { ReceiptOutbox.Answer(it["status"].int(), it["field"] as String?, it["retryAfter"]?.int()) }
                        assertEquals(what, verdict(step["verdict"]), outbox.record(answer, receipt(step["receipt"]), at(step["at"]), step["jitter"].double()))
                        if (step.containsKey("pausedUntil")) assertEquals(what, step["pausedUntil"]?.let { at(it) }, outbox.pausedUntil)
                        if (step.containsKey("failures")) assertEquals(what, step["failures"].int(), outbox.failures)
                    }
                    "registered" -> outbox.registered()
                    "reload" -> outbox = ReceiptOutbox.fromJsonObject(Json.parse(Json.write(outbox.toJsonObject())).obj())
                    "entries" -> {
                        val entries = outbox.entries.map { it.receipt }
                        if (step.containsKey("receipts")) assertEquals(what, step["receipts"].list().map { receipt(it) }, entries)
                        if (step.containsKey("count")) assertEquals(what, step["count"].int(), entries.size)
                        if (step.containsKey("first")) assertEquals(what, step["first"], entries.first().editionId)
                    }
                    else -> throw AssertionError("unknown op in $what")
                }
            }
        }
    }

    @Test
    fun `a delivery removes only the receipt sent - a success added meanwhile for a failed one stays`() {
        val outbox = ReceiptOutbox()
        val failed = ReceiptReport("e1", ReceiptResult.FAILED)
        val success = ReceiptReport("e1", ReceiptResult.NEW_DATA, 10)
        outbox.add(failed, start)
        val sending = outbox.due(start).first()
        outbox.add(success, start.plusSeconds(1))
        assertEquals(ReceiptOutbox.Verdict.DELIVERED, outbox.record(ReceiptOutbox.Answer(201), sending, start.plusSeconds(2), 0.0))
        assertEquals(listOf(success), outbox.due(start.plusSeconds(2)))
    }

    private fun temporaryFolder(): File = Files.createTempDirectory("paperboy-outbox").toFile()

    @Test
    fun `the outbox file keeps receipts, their pause and the token across instances, without the 401`() {
        val folder = temporaryFolder()
        try {
            val file = ReceiptOutboxFile(File(folder, "receipts.json"))
            file.update {
                it.outbox.add(ReceiptReport("e1", ReceiptResult.NEW_DATA, 5), start)
                it.outbox.record(ReceiptOutbox.Answer(503), ReceiptReport("e1", ReceiptResult.NEW_DATA, 5), start, 0.0)
                it.outbox.unauthorized = true
                it.token = PushToken.Fcm("cAbC-12:APA91b_x")
            }
            val other = ReceiptOutboxFile(File(folder, "receipts.json")).read()
            assertEquals(PushToken.Fcm("cAbC-12:APA91b_x"), other.token)
            assertEquals(start.plusSeconds(30), other.outbox.pausedUntil)
            assertEquals(1, other.outbox.failures)
            assertEquals(false, other.outbox.unauthorized)
            assertEquals(listOf(ReceiptReport("e1", ReceiptResult.NEW_DATA, 5)), other.outbox.due(start.plusSeconds(30)))
        } finally {
            folder.deleteRecursively()
        }
    }

    @Test
    fun `an unreadable outbox file is moved aside and the outbox starts empty`() {
        val folder = temporaryFolder()
        try {
            val path = File(folder, "receipts.json")
            path.writeText("{\"outbox\": {\"entries\": [")
            val file = ReceiptOutboxFile(path)
            assertTrue(file.read().outbox.entries.isEmpty())
            assertTrue(File(folder, "receipts.json.unreadable").isFile)
            file.update { it.outbox.add(ReceiptReport("e2", ReceiptResult.NO_DATA), start) }
            assertEquals(1, file.read().outbox.entries.size)
        } finally {
            folder.deleteRecursively()
        }
    }

    @Test
    fun `an unreadable outbox file set aside is told through the hook, once`() {
        val folder = temporaryFolder()
        try {
            val path = File(folder, "receipts.json")
            path.writeText("not json at all")
            val told = ArrayList<File>()
            val file = ReceiptOutboxFile(path) { aside, _ -> told.add(aside) }
            assertTrue(file.read().outbox.entries.isEmpty())
            file.update { it.outbox.add(ReceiptReport("e2", ReceiptResult.NO_DATA), start) }
            assertEquals(1, file.read().outbox.entries.size)
            assertEquals(listOf(File(folder, "receipts.json.unreadable")), told)
        } finally {
            folder.deleteRecursively()
        }
    }

    @Test
    fun `writers on several threads lose no receipt`() {
        val folder = temporaryFolder()
        val pool = Executors.newFixedThreadPool(4)
        try {
            val path = File(folder, "receipts.json")
            val ready = CountDownLatch(1)
            for (index in 0 until 40) {
                pool.execute {
                    ready.await()
                    ReceiptOutboxFile(path).update { it.outbox.add(ReceiptReport("e$index", ReceiptResult.NO_DATA), start) }
                }
            }
            ready.countDown()
            pool.shutdown()
            assertTrue(pool.awaitTermination(30, TimeUnit.SECONDS))
            assertEquals(40, ReceiptOutboxFile(path).read().outbox.entries.size)
        } finally {
            pool.shutdownNow()
            folder.deleteRecursively()
        }
    }

    @Test
    fun `reading an outbox file that does not exist gives an empty outbox and no token`() {
        val folder = temporaryFolder()
        try {
            val contents = ReceiptOutboxFile(File(folder, "none.json")).read()
            assertTrue(contents.outbox.entries.isEmpty())
            assertNull(contents.token)
        } finally {
            folder.deleteRecursively()
        }
    }
}
