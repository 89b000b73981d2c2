package paperboy.client

import org.junit.Assert.assertEquals
import org.junit.Assert.assertFalse
import org.junit.Assert.assertNull
import org.junit.Assert.assertTrue
import org.junit.Test

/** What the client sends: receipts of each kind, registrations, the open report, against the vectors. */
class BodyVectorTests {
    @Test
    fun `receipt bodies of each kind are the vectors'`() {
        val cases = Vectors.load("receipts.json")["cases"].list().map { it.obj() }
        assertEquals(setOf("newData", "noData", "failed"), cases.map { it["input"].obj()["result"] }.toSet())
        for (case in cases) {
            val input = case["input"].obj()
            val receipt = ReceiptReport(
                editionId = input["editionId"] as String,
                result = ReceiptResult.of(input["result"] as String)!!,
                bytes = input["bytes"]?.long() ?: 0,
                seconds = input["seconds"]?.double() ?: 0.0,
                network = (input["network"] as String?)?.let { Network.of(it)!! },
                charging = input["charging"] as Boolean?,
                lowPowerMode = input["lowPowerMode"] as Boolean?,
                backgroundRefresh = input["backgroundRefresh"] as Boolean?,
                wave = input["wave"]?.int(),
                secondsFromPush = input["secondsFromPush"]?.double()
            )
            val sent = Json.parse(receipt.toJson())
            assertTrue("${case["name"]}: ${receipt.toJson()}", Json.equivalent(case["body"], sent))
            assertEquals(case["name"] as String, receipt, ReceiptReport.fromJsonObject(sent.obj()))
        }
    }

    @Test
    fun `the receipt of a push's run echoes its wave and counts secondsFromPush from sentAt`() {
        val wakeUp = EditionWakeUp.decode(Vectors.load("pushes/fcm-android-background-medium-fallback.json")["message"].obj()["data"].strings())!!
        val sentAt = wakeUp.sentAt!!
        val receipt = ReceiptReport.forWakeUp(wakeUp, sentAt.plusSeconds(600), sentAt.plusSeconds(630), ReceiptResult.NEW_DATA, 8_388_608, 21.5,
            DeviceContext(Network.WIFI, charging = true, lowPowerMode = false, backgroundRefresh = true))
        val body = Json.parse(receipt.toJson()).obj()
        assertEquals("0b4ed6a3-3c2e-4b8e-9a55-0d2f3f1b7c11", body["editionId"])
        assertEquals(2, body["wave"].int())
        assertEquals(630.0, body["secondsFromPush"].double(), 0.0)
        assertEquals("wifi", body["network"])
        assertTrue(ReceiptResult.NEW_DATA.isSuccess && ReceiptResult.NO_DATA.isSuccess && !ReceiptResult.FAILED.isSuccess)
    }

    @Test
    fun `registration bodies are the vectors'`() {
        for (case in Vectors.load("registrations.json")["cases"].list().map { it.obj() }) {
            val input = case["input"].obj()
            val route = input["route"].obj()
            val registration = DeviceRegistration(
                route = if (route["provider"] == "fcm") {
                    DeviceRegistration.Route.Fcm(DeviceRegistration.Platform.values().first { it.wire == route["platform"] })
                } else {
                    DeviceRegistration.Route.Apns(DeviceRegistration.Environment.values().first { it.wire == route["environment"] })
                },
                subscriptions = input["subscriptions"].list().map { it as String },
                timeZone = input["timeZone"] as String,
                tier = ImageTier.of(input["tier"] as String)!!,
                autoDownload = input["autoDownload"] as Boolean? ?: true,
                alertsAuthorized = input["alertsAuthorized"] as Boolean,
                notifyWhenReady = input["notifyWhenReady"] as Boolean? ?: false,
                editionAlerts = input["editionAlerts"] as Boolean? ?: false,
                appVersion = input["appVersion"] as String?,
                osVersion = input["osVersion"] as String?,
                model = input["model"] as String?,
                locale = input["locale"] as String?
            )
            val sent = Json.parse(registration.toJson())
            assertTrue("${case["name"]}: ${registration.toJson()}", Json.equivalent(case["body"], sent))
            assertEquals("${case["name"]}: the route's fields first", case["body"].obj().keys.toList(), sent.obj().keys.toList())
        }
    }

    @Test
    fun `the open report is a POST without a body to the token's path, never retried`() {
        val vector = Vectors.load("open-report.json")
        assertEquals(vector["method"], OpenReport.METHOD)
        assertNull(vector["body"])
        assertNull(OpenReport.BODY)
        assertEquals(vector["status"].int(), OpenReport.EXPECTED_STATUS)
        for (case in vector["tokens"].list().map { it.obj() }) {
            assertEquals(case["path"], OpenReport.path(PushToken.Fcm(case["token"] as String)))
        }
        for (reaction in listOf(ApiReaction.RetryLater, ApiReaction.RetryAfter(5), ApiReaction.RegisterThenRetry)) {
            assertFalse(vector["retried"] as Boolean || OpenReport.retries(reaction))
        }
    }

    @Test
    fun `an APNs token is lowercase hex of its bytes, whatever their length`() {
        assertEquals("8d4e0b1cff00", PushToken.Apns(byteArrayOf(0x8d.toByte(), 0x4e, 0x0b, 0x1c, 0xff.toByte(), 0x00)).text)
        assertEquals(200, PushToken.Apns(ByteArray(100) { 0xab.toByte() }).text.length)
        assertEquals("cAbC-12%3AAPA91b_x", PushToken.Fcm("cAbC-12:APA91b_x").pathSegment)
    }
}
