import Crypto
import PaperboyCore

/// One numbered SQL file from `migrations/`, applied once, in name order.
public struct Migration: Sendable, Equatable {
    /// The file name, e.g. `0001_initial.sql`; it orders the migrations.
    public var name: String
    /// The file's SQL, run as one transaction.
    public var sql: String

    public init(name: String, sql: String) {
        self.name = name
        self.sql = sql
    }

    /// The SHA-256 of the SQL as lowercase hex, recorded when applied so that an edited file is noticed.
    public var checksum: String {
        Hex.encode(SHA256.hash(data: Array(sql.utf8)))
    }
}
