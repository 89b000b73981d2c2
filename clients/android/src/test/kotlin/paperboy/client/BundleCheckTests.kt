package paperboy.client

import org.junit.Assert.assertEquals
import org.junit.Assert.assertFalse
import org.junit.Assert.assertTrue
import org.junit.Test
import java.io.ByteArrayInputStream
import java.io.File
import java.nio.file.Files

/** A downloaded bundle is used only when its length and SHA-256 are the manifest's. */
class BundleCheckTests {
    private fun withFolder(body: (File) -> Unit) {
        val folder = Files.createTempDirectory("paperboy-bundle").toFile()
        try {
            body(folder)
        } finally {
            folder.deleteRecursively()
        }
    }

    @Test
    fun `the vectors' digests are SHA-256 of their texts - foo and test, as docs show`() {
        val large = EditionManifest.from(Vectors.load("editions/morning-small-large.json")["edition"].obj()).tiers[ImageTier.LARGE]!!.first()
        assertEquals(large.sha256, BundleCheck.sha256(ByteArrayInputStream("test".toByteArray())))
    }

    @Test
    fun `the published bundle is verified and moved into place`() = withFolder { folder ->
        val download = File(folder, "0.part").apply { writeText("test") }
        val bundle = EditionManifest.Bundle("https://cdn.example.com/a.zip", 4, "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08")
        val target = File(folder, "edition/0.bundle")
        assertEquals(BundleCheck.Verdict.Verified, BundleCheck.place(download, bundle, target))
        assertEquals("test", target.readText())
        assertFalse(download.exists())
    }

    @Test
    fun `a checksum mismatch refuses the bundle - deleted, never placed`() = withFolder { folder ->
        val download = File(folder, "0.part").apply { writeText("tesT") }
        val bundle = EditionManifest.Bundle("https://cdn.example.com/a.zip", 4, "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08")
        val target = File(folder, "edition/0.bundle")
        val verdict = BundleCheck.place(download, bundle, target)
        assertTrue(verdict is BundleCheck.Verdict.WrongDigest)
        assertFalse(verdict.isVerified)
        assertFalse(target.exists())
        assertFalse("a bad file is not resumed", download.exists())
    }

    @Test
    fun `another length is refused before any digest`() = withFolder { folder ->
        val download = File(folder, "0.part").apply { writeText("tes") }
        val bundle = EditionManifest.Bundle("https://cdn.example.com/a.zip", 4, "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08")
        assertEquals(BundleCheck.Verdict.WrongLength(4, 3), BundleCheck.check(download, bundle))
        assertEquals(BundleCheck.Verdict.WrongLength(4, -1), BundleCheck.check(File(folder, "absent"), bundle))
    }

    @Test
    fun `an uppercase digest in the manifest matches (the server takes either case)`() = withFolder { folder ->
        val download = File(folder, "0.part").apply { writeText("foo") }
        val bundle = EditionManifest.Bundle("https://cdn.example.com/a.zip", 3, "2C26B46B68FFC68FF99B453C1D30413413422D706483BFA0F98A5E886266E7AE")
        assertEquals(BundleCheck.Verdict.Verified, BundleCheck.check(download, bundle))
    }
}
