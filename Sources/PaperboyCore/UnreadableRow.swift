/// A stored value that cannot be read back (written by a newer or broken version, or edited by hand). Never
/// replaced by a default: a broadcast whose options cannot be read would run with options nobody chose.
public struct UnreadableRow: Error, Equatable, CustomStringConvertible {
    /// The table and the row's key, e.g. `broadcasts` and its id.
    public var table: String
    public var key: String
    public var column: String
    public var message: String

    public init(table: String, key: String, column: String, message: String) {
        self.table = table
        self.key = key
        self.column = column
        self.message = message
    }

    public var description: String { "\(table) \(key): its \(column) cannot be read: \(message)" }
}
