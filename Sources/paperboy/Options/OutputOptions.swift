import ArgumentParser
import Foundation

/// `--json`: the result as one line of JSON for scripts instead of text for people. One definition for
/// every command that prints a result, so that the flag reads and behaves the same everywhere.
struct OutputOptions: ParsableArguments {
    @Flag(help: "Print the result as JSON for scripts.")
    var json = false
}

/// Prints a value as one line of JSON with sorted keys and ISO 8601 dates.
func printJSON(_ value: some Encodable) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    encoder.dateEncodingStrategy = .iso8601
    print(String(decoding: try encoder.encode(value), as: UTF8.self))
}
