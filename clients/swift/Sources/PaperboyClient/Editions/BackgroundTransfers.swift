import Foundation

/// The downloads that go on after a wake-up's time: on iOS a background `URLSession` per edition (Platform/), in
/// tests a fake. The edition's downloader hands them the bundles it could not fetch in the wake's time and hears back
/// through ``EditionDownloader/transferArrived(_:file:at:)`` and ``EditionDownloader/transferFailed(_:at:)``.
public protocol BackgroundTransfers: Sendable {
    /// Whether the edition's transfers still run: a later wave must not start the edition again.
    func hasTransfers(editionID: String) async -> Bool
    /// Starts the transfers, in the edition's session, which gives up at `deadline`.
    func start(_ transfers: [BackgroundTransfer], editionID: String, deadline: Date)
}

/// One bundle to download in the background, and what finishing the edition needs to know when it arrives (perhaps in
/// a process iOS relaunched for the session's events: it travels in the task's `taskDescription`).
public struct BackgroundTransfer: Codable, Sendable, Equatable {
    public var url: URL
    public var note: TransferNote

    /// The least time before the deadline worth handing to a background session: iOS runs its transfers when it
    /// likes, and the session gives up at the deadline (its `timeoutIntervalForResource`), never after.
    public static let shortestSession: TimeInterval = 60
}

/// What a background transfer carries.
public struct TransferNote: Codable, Sendable, Equatable {
    public var editionID: String
    /// The edition store's claim the transfer writes under (``EditionStore/Claim``).
    public var claimID: UUID
    public var index: Int
    public var count: Int
    public var bytes: Int64
    public var sha256: String
    public var wave: Int
    public var sentAt: Date?
    /// The edition's deadline: no receipt after it.
    public var deadline: Date
    /// When the push arrived.
    public var arrival: Date
    /// When the wake-up ran (the receipt's `secondsFromPush` ends there) and started downloading (its `seconds`
    /// start there).
    public var startedAt: Date
    /// The bytes the wake-up fetched itself before handing the rest over.
    public var bytesBefore: Int64
}

/// Background time for the receipts a wake-up left in the outbox (the backlog, and its own receipt when it could not
/// go): on iOS a `BGAppRefreshTask` (Platform/), whose run sends them (``ReceiptCourier/flush()``); the app sends them
/// on foregrounding too (``ReceiptCourier/onForeground(seconds:timer:)``).
public protocol BacklogRefresh: Sendable {
    /// Asks for background time no earlier than `earliest`.
    func schedule(earliest: Date)
}
