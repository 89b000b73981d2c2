/// An edition's image tier: `small`, `medium` or `large`, as a device registers it and a push names it.
public enum ImageTier: String, Codable, CaseIterable, Sendable, Comparable {
    case small, medium, large

    /// The tiers to try, in order, when an edition lacks this one: this tier, then the smaller ones (nearest
    /// first), then the larger ones (nearest first). Smaller first, because a tier chosen for a device's
    /// screen or storage is better replaced by one that fits in its time and space; a larger one only when
    /// nothing smaller exists.
    public var fallbackOrder: [ImageTier] {
        let all = ImageTier.allCases
        let smaller = all.filter { $0 < self }.reversed()
        let larger = all.filter { $0 > self }
        return [self] + smaller + larger
    }

    public static func < (lhs: ImageTier, rhs: ImageTier) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}
