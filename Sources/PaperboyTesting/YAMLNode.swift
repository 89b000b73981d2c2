import Foundation

/// The subset of YAML in `docker/compose.yaml` and the Prometheus files in `docker/prometheus/`: block mappings and
/// sequences by indentation, flow sequences of scalars (`["a", "b"]`), plain, single- and double-quoted scalars,
/// literal block scalars as a mapping's value (`|` or `|-`, without blank lines: the alert rules' expressions),
/// comments. Anything else (anchors, tags, folded scalars, flow mappings) is refused, so the files stay readable by
/// this reader. Scalars are kept as text; an empty value is "".
public indirect enum YAMLNode: Equatable, Sendable, CustomStringConvertible {
    case scalar(String)
    case list([YAMLNode])
    case map([String: YAMLNode])

    public var scalar: String? { if case .scalar(let text) = self { text } else { nil } }
    public var list: [YAMLNode]? { if case .list(let items) = self { items } else { nil } }
    public var map: [String: YAMLNode]? { if case .map(let entries) = self { entries } else { nil } }
    public subscript(key: String) -> YAMLNode? { map?[key] }

    public var description: String {
        switch self {
        case .scalar(let text): "\"\(text)\""
        case .list(let items): "[\(items.map(\.description).joined(separator: ", "))]"
        case .map(let entries): "{\(entries.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", "))}"
        }
    }

    /// From JSON (PyYAML's reading, every scalar a string).
    public init(json: Any) throws {
        switch json {
        case let text as String: self = .scalar(text)
        case let items as [Any]: self = .list(try items.map(YAMLNode.init(json:)))
        case let entries as [String: Any]: self = .map(try entries.mapValues(YAMLNode.init(json:)))
        default: throw YAMLError(line: 0, message: "unexpected JSON \(json)")
        }
    }

    public struct YAMLError: Error, CustomStringConvertible {
        public var line: Int
        public var message: String
        public var description: String { "line \(line): \(message)" }
    }

    private struct Line {
        var number: Int
        var indent: Int
        var text: String
        /// The line as written, for a literal block scalar (whose `#` is text, not a comment).
        var raw: String
    }

    public static func parse(_ source: String) throws -> YAMLNode {
        var lines: [Line] = []
        for (index, raw) in source.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let text = stripComment(String(raw))
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty { continue }
            let indentation = text.prefix { $0 == " " || $0 == "\t" }
            if indentation.contains("\t") { throw YAMLError(line: index + 1, message: "a tab in the indentation") }
            if trimmed == "---" || trimmed == "..." { throw YAMLError(line: index + 1, message: "one document only") }
            lines.append(Line(number: index + 1, indent: indentation.count, text: trimmed, raw: String(raw)))
        }
        var reader = Reader(lines: lines)
        guard let first = lines.first else { return .map([:]) }
        guard first.indent == 0 else { throw YAMLError(line: first.number, message: "the document starts indented") }
        let node = try reader.block(indent: 0)
        if reader.position < lines.count {
            throw YAMLError(line: lines[reader.position].number, message: "unexpected indentation")
        }
        return node
    }

    /// The line without a comment: `#` at the start or after a space, outside quotes.
    private static func stripComment(_ line: String) -> String {
        var quote: Character?
        var previous: Character = " "
        var result = ""
        for character in line {
            if let open = quote {
                if character == open { quote = nil }
            } else if character == "\"" || character == "'" {
                quote = character
            } else if character == "#" && (previous == " " || previous == "\t") {
                break
            }
            result.append(character)
            previous = character
        }
        return String(result.reversed().drop { $0 == " " }.reversed())
    }

    private struct Reader {
        var lines: [Line]
        var position = 0

        mutating func block(indent: Int) throws -> YAMLNode {
            let line = lines[position]
            return line.text == "-" || line.text.hasPrefix("- ") ? try sequence(indent: indent) : try mapping(indent: indent)
        }

        mutating func mapping(indent: Int) throws -> YAMLNode {
            var entries: [String: YAMLNode] = [:]
            while position < lines.count, lines[position].indent == indent {
                let line = lines[position]
                if line.text == "-" || line.text.hasPrefix("- ") { break }
                guard let entry = try YAMLNode.splitKey(line.text, line: line.number) else {
                    throw YAMLError(line: line.number, message: "expected `key: value`")
                }
                let (key, rest) = entry
                if entries[key] != nil { throw YAMLError(line: line.number, message: "duplicate key \(key)") }
                position += 1
                if rest == "|" || rest == "|-" {
                    entries[key] = try literal(after: line, indent: indent, keepNewline: rest == "|")
                } else if !rest.isEmpty {
                    entries[key] = try YAMLNode.inline(rest, line: line.number)
                } else if position < lines.count, lines[position].indent > indent {
                    entries[key] = try block(indent: lines[position].indent)
                } else if position < lines.count, lines[position].indent == indent,
                    lines[position].text == "-" || lines[position].text.hasPrefix("- ")
                {
                    entries[key] = try sequence(indent: indent)
                } else {
                    entries[key] = .scalar("")
                }
            }
            if position < lines.count, lines[position].indent > indent {
                throw YAMLError(line: lines[position].number, message: "unexpected indentation")
            }
            return .map(entries)
        }

        /// The lines indented deeper than `indent` after `line`, as written, less their first line's indentation;
        /// with the final line break for `|`, without for `|-`.
        mutating func literal(after line: Line, indent: Int, keepNewline: Bool) throws -> YAMLNode {
            var text: [String] = []
            var previous = line.number
            let column = position < lines.count ? lines[position].indent : 0
            while position < lines.count, lines[position].indent > indent {
                let next = lines[position]
                guard next.number == previous + 1 else {
                    throw YAMLError(line: previous + 1, message: "a blank or comment line in a block scalar")
                }
                guard next.indent >= column else { throw YAMLError(line: next.number, message: "a block scalar's line less indented than its first") }
                text.append(String(next.raw.dropFirst(column)))
                previous = next.number
                position += 1
            }
            guard !text.isEmpty else { throw YAMLError(line: line.number, message: "an empty block scalar") }
            return .scalar(text.joined(separator: "\n") + (keepNewline ? "\n" : ""))
        }

        mutating func sequence(indent: Int) throws -> YAMLNode {
            var items: [YAMLNode] = []
            while position < lines.count, lines[position].indent == indent,
                lines[position].text == "-" || lines[position].text.hasPrefix("- ")
            {
                let line = lines[position]
                let item = line.text.dropFirst(1).drop { $0 == " " }
                if item.isEmpty {
                    position += 1
                    guard position < lines.count, lines[position].indent > indent else {
                        items.append(.scalar(""))
                        continue
                    }
                    items.append(try block(indent: lines[position].indent))
                } else if try YAMLNode.splitKey(String(item), line: line.number) != nil {
                    // `- key: value` starts a mapping whose keys line up with `key`.
                    let column = indent + (line.text.count - item.count)
                    lines[position] = Line(number: line.number, indent: column, text: String(item), raw: line.raw)
                    items.append(try mapping(indent: column))
                } else {
                    position += 1
                    items.append(try YAMLNode.inline(String(item), line: line.number))
                }
            }
            return .list(items)
        }
    }

    /// `key: rest` or `key:`, with the colon outside quotes; nil when the text is not a mapping entry.
    private static func splitKey(_ text: String, line: Int) throws -> (String, String)? {
        if text.hasPrefix("[") || text.hasPrefix("{") { return nil }
        var quote: Character?
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            if let open = quote {
                if character == open { quote = nil }
            } else if character == "\"" || character == "'" {
                quote = character
            } else if character == ":" {
                let next = text.index(after: index)
                if next == text.endIndex || text[next] == " " {
                    let key = try unquote(text[..<index].trimmingCharacters(in: .whitespaces), line: line)
                    let rest = next == text.endIndex ? "" : text[next...].trimmingCharacters(in: .whitespaces)
                    return (key, rest)
                }
            }
            index = text.index(after: index)
        }
        return nil
    }

    private static func inline(_ text: String, line: Int) throws -> YAMLNode {
        if let first = text.first, "&*!|>{@`%".contains(first) {
            throw YAMLError(line: line, message: "\(first)… is outside the YAML this reader takes")
        }
        guard text.hasPrefix("[") else { return .scalar(try unquote(text, line: line)) }
        guard text.hasSuffix("]") else { throw YAMLError(line: line, message: "a flow sequence on one line") }
        let inner = text.dropFirst().dropLast()
        var items: [YAMLNode] = []
        var quote: Character?
        var current = ""
        for character in inner {
            if let open = quote {
                if character == open { quote = nil }
            } else if character == "\"" || character == "'" {
                quote = character
            } else if character == "[" || character == "{" {
                throw YAMLError(line: line, message: "nested flow collections")
            } else if character == "," {
                items.append(.scalar(try unquote(current.trimmingCharacters(in: .whitespaces), line: line)))
                current = ""
                continue
            }
            current.append(character)
        }
        let last = current.trimmingCharacters(in: .whitespaces)
        if !last.isEmpty { items.append(.scalar(try unquote(last, line: line))) }
        return .list(items)
    }

    private static func unquote(_ text: String, line: Int) throws -> String {
        if text.count >= 2, text.hasPrefix("'"), text.hasSuffix("'") {
            return String(text.dropFirst().dropLast()).replacingOccurrences(of: "''", with: "'")
        }
        if text.count >= 2, text.hasPrefix("\""), text.hasSuffix("\"") {
            let inner = text.dropFirst().dropLast()
            if inner.contains("\\") { throw YAMLError(line: line, message: "escapes in double quotes") }
            return String(inner)
        }
        if text.hasPrefix("\"") || text.hasPrefix("'") { throw YAMLError(line: line, message: "an unterminated quote") }
        return text
    }
}
