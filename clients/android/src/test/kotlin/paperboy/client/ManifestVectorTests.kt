package paperboy.client

import org.junit.Assert.assertEquals
import org.junit.Assert.fail
import org.junit.Test

/** The editions the server answers (the vectors): their bundles and the plan per tier, and the refused ones. */
class ManifestVectorTests {
    private val editions = Vectors.files("editions", "").filter { !it.endsWith("refused.json") && !it.endsWith("tolerated.json") }

    @Test
    fun `each tier falls back to the smaller ones first, nearest first, then the larger`() {
        assertEquals(listOf(ImageTier.LARGE, ImageTier.MEDIUM, ImageTier.SMALL), ImageTier.LARGE.fallbackOrder)
        assertEquals(listOf(ImageTier.MEDIUM, ImageTier.SMALL, ImageTier.LARGE), ImageTier.MEDIUM.fallbackOrder)
        assertEquals(listOf(ImageTier.SMALL, ImageTier.MEDIUM, ImageTier.LARGE), ImageTier.SMALL.fallbackOrder)
    }

    @Test
    fun `every edition of the vectors parses, and each tier's plan is the vector's`() {
        assertEquals(4, editions.size)
        for (path in editions) {
            val vector = Vectors.load(path)
            val json = Json.write(vector["edition"])
            val manifest = EditionManifest.parse(json)
            val edition = vector["edition"].obj()
            assertEquals(path, edition["id"], manifest.id)
            assertEquals(path, edition["deadline"], manifest.deadlineText)
            assertEquals(path, edition["pages"].list().size, manifest.pages.size)
            for ((tierName, expectedValue) in vector["plans"].obj()) {
                val expected = expectedValue.obj()
                val plan = manifest.plan(ImageTier.of(tierName)!!) ?: throw AssertionError("$path: no plan for $tierName")
                assertEquals("$path $tierName", expected["tier"], plan.tier.wire)
                assertEquals("$path $tierName", expected["fellBack"], plan.fellBack)
                assertEquals("$path $tierName", expected["urls"], plan.bundles.map { it.url })
                assertEquals("$path $tierName", expected["bytes"].long(), plan.bytes)
            }
        }
    }

    @Test
    fun `an edition without any bundle has no plan`() {
        val edition = LinkedHashMap(Vectors.load("editions/morning-small-large.json")["edition"].obj())
        edition["tiers"] = emptyMap<String, Any?>()
        assertEquals(null, EditionManifest.from(edition).plan(ImageTier.MEDIUM))
    }

    @Test
    fun `refused editions name their field`() {
        val cases = Vectors.load("editions/refused.json")["cases"].list().map { it.obj() }
        for (case in cases) {
            try {
                EditionManifest.parse(Json.write(case["edition"]))
                fail("${case["name"]}: parsed")
            } catch (error: ManifestException) {
                assertEquals("${case["name"]}: ${error.message}", case["refusal"], error.field)
            }
        }
    }

    @Test
    fun `tolerated editions are read - unknown tiers skipped, no pages, lowercase ids, uppercase hex`() {
        for (case in Vectors.load("editions/tolerated.json")["cases"].list().map { it.obj() }) {
            val manifest = EditionManifest.parse(Json.write(case["edition"]))
            assertEquals(case["name"] as String, case["tiers"], manifest.tiers.keys.map { it.wire }.sorted())
            assertEquals(case["name"] as String, case["id"], manifest.id)
        }
    }
}
