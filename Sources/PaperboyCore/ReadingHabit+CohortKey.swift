extension ReadingHabit {
    /// The 32-bit cohort key space as 1,440 equal stretches, one per minute of a reader's day.
    public static let keysPerMinute = UInt32((UInt64(1) << 32) / 1440)

    /// The cohort key that orders a device by a habitual first-open `minute`: the minute's stretch of the key
    /// space, and within it the token's own key (``DeviceToken/cohortKey``) folded in, so that readers of one
    /// minute keep their hash order among themselves and never share one key (a batch holds every device of its
    /// last key).
    ///
    /// Workers send a cohort in key order and cohorts are key ranges, so a broadcast's slots go to readers in the
    /// order of their minutes: the plan's slots stay the same, only who goes in which changes. A device without a
    /// known habit keeps its token's key, spread evenly over the whole space: among the habits in hash order.
    public static func cohortKey(minute: Double, tokenKey: UInt32) -> UInt32 {
        let stretch = UInt32(min(max(minute, 0), ReaderDay.minutesPerDay - 1).rounded(.down))
        return stretch * keysPerMinute + tokenKey % keysPerMinute
    }

    /// The minute of the reader's day whose stretch holds `key`: a habit's minute for a key a habit set.
    public static func minute(ofKey key: UInt32) -> Int {
        min(Int(key / keysPerMinute), Int(ReaderDay.minutesPerDay) - 1)
    }

    /// How far, in minutes, a device's key may stand from its habit before it moves: moving a key rewrites the
    /// device's row and its index entries, and an estimate drifts by a few minutes a morning while the order it
    /// buys is no finer than a reader's own day-to-day wander (about ten minutes).
    public static let keyTolerance = 5.0

    /// The key that places the device for the morning after `day` (its day type's estimate, or the other's,
    /// ``ordering(weekend:)``): `current` when that already stands within ``keyTolerance`` minutes of the habit,
    /// else the habit minute's key; nil while no habit is known (the device keeps the key it has).
    public func cohortKey(after day: ReaderDay, tokenKey: UInt32, current: UInt32) -> UInt32? {
        guard let estimate = ordering(weekend: day.nextIsWeekend) else { return nil }
        if abs(Double(Self.minute(ofKey: current)) - estimate.minute.rounded(.down)) <= Self.keyTolerance { return current }
        return Self.cohortKey(minute: estimate.minute, tokenKey: tokenKey)
    }
}
