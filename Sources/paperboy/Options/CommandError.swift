/// A command that could not do its work, for a reason the operator can act on. Printed as
/// `Error: <message>` (without the usage text, which is for mistakes in the command line); exit code 1.
struct CommandError: Error, CustomStringConvertible {
    var message: String

    init(_ message: String) {
        self.message = message
    }

    var description: String { message }
}
