import PaperboyCore

/// How `devices.cohort_key` holds ``DeviceToken/cohortKey``: the unsigned 32-bit key minus 2³¹, a signed
/// `integer` in the same order (PostgreSQL has no unsigned type). The one place that knows the offset.
enum StoredCohortKey {
    static let offset: Int64 = 1 << 31

    /// The stored form of a key.
    static func stored(_ key: UInt32) -> Int32 {
        Int32(bitPattern: key ^ 0x8000_0000)
    }

    /// The key a stored value holds.
    static func key(stored: Int32) -> UInt32 {
        UInt32(bitPattern: stored) ^ 0x8000_0000
    }

    /// The stored form of a key range bound (up to 2³², the end of the last cohort).
    static func stored(bound: UInt64) -> Int64 {
        Int64(bound) - offset
    }

    /// SQL for the cohort of the stored key in `column` when the audience is split into `count` cohorts (a
    /// bind or a literal): ``DeviceToken/cohort(ofKey:count:)`` on the unsigned key.
    static func cohortSQL(column: String, count: String) -> String {
        "((\(column)::bigint + \(offset)) * \(count)) >> 32"
    }
}

extension DeviceToken {
    /// ``cohortKey`` as stored in `devices.cohort_key`.
    public var storedCohortKey: Int32 { StoredCohortKey.stored(cohortKey) }
}

extension FCMToken {
    /// ``cohortKey`` as stored in `devices.cohort_key`.
    public var storedCohortKey: Int32 { StoredCohortKey.stored(cohortKey) }
}
