package paperboy.client

/** An edition's image tier, as a device registers it and a push names it: `small`, `medium` or `large`. */
enum class ImageTier(val wire: String) {
    SMALL("small"),
    MEDIUM("medium"),
    LARGE("large");

    /**
     * The tiers to try, in order, when an edition lacks this one: this tier, then the smaller ones (nearest
     * first), then the larger ones (nearest first), as `ImageTier.fallbackOrder` in the Swift client. Smaller
     * first: a tier chosen for a device's screen or storage is better replaced by one that fits in its time and
     * space; a larger one only when nothing smaller exists.
     */
    val fallbackOrder: List<ImageTier>
        get() {
            val all = values().toList()
            val smaller = all.filter { it < this }.reversed()
            val larger = all.filter { it > this }
            return listOf(this) + smaller + larger
        }

    companion object {
        /** The tier of this exact name (case matters, as on the wire), or null. */
        @JvmStatic
        fun of(wire: String): ImageTier? = values().firstOrNull { it.wire == wire }
    }
}
