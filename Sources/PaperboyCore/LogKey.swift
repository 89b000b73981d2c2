/// The metadata keys of Paperboy's log lines, defined once so that every line names a thing the same way and
/// a log query written for one line finds the others. Messages are fixed text; the data goes under these.
public enum LogKey {
    public static let address = "address"
    public static let app = "app"
    public static let batch = "batch"
    public static let batches = "batches"
    public static let broadcast = "broadcast"
    public static let count = "count"
    public static let cron = "cron"
    public static let cutoff = "cutoff"
    public static let deadline = "deadline"
    public static let deliveries = "deliveries"
    public static let device = "device"
    public static let devices = "devices"
    /// Some devices' ids (at most 20), comma-separated: those a log line is about.
    public static let deviceIDs = "device_ids"
    /// Devices that fell dormant (``BroadcastOptions/dormantAfter``).
    public static let dormant = "dormant"
    public static let edition = "edition"
    public static let environment = "environment"
    public static let error = "error"
    public static let inserted = "inserted"
    public static let instant = "instant"
    public static let kind = "kind"
    public static let leases = "leases"
    public static let migration = "migration"
    public static let path = "path"
    public static let planned = "planned"
    /// Key ranges of devices counted together (wave 1's pushes towards dormancy).
    public static let ranges = "ranges"
    public static let reason = "reason"
    public static let receipts = "receipts"
    /// The receipt tallies' watermark: receipts up to this instant are counted.
    public static let countedThrough = "counted_through"
    /// Failed receipts replaced by a success, moved in the receipt tallies.
    public static let upgrades = "upgrades"
    public static let result = "result"
    /// A console role (`operator`, `viewer`).
    public static let role = "role"
    public static let schedule = "schedule"
    /// A service of a process (`paperboy serve`, `worker`), by name.
    public static let service = "service"
    public static let seconds = "seconds"
    public static let slot = "slot"
    public static let start = "start"
    public static let timeZone = "time_zone"
    public static let tier = "tier"
    public static let provider = "provider"
    public static let backoff = "backoff"
    public static let returned = "returned"
    public static let deadlineIn = "deadline_in"
    public static let wave = "wave"
    public static let waveMembers = "wave_members"
    public static let worker = "worker"
    /// A batch's timings: reading its targets, sending, recording.
    public static let readTime = "read"
    public static let sendTime = "sent"
    public static let recordTime = "recorded"
}
