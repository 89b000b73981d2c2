extension Migration {
    /// The file's statements, split at top-level semicolons.
    ///
    /// PostgresNIO speaks only the extended query protocol, which runs one statement at a time, so a
    /// migration file is split here. Semicolons inside quotes (`'…'`, `"…"`), dollar-quoted bodies
    /// (`$$…$$`, `$tag$…$tag$`) and comments (`--`, `/* */`) do not split.
    public var statements: [String] {
        let text = Array(sql.unicodeScalars)
        var statements: [String] = []
        var current = String.UnicodeScalarView()
        var index = 0

        func flush() {
            let statement = String(current).trimmingWhitespace()
            if !statement.isEmpty, !statement.isOnlyComments { statements.append(statement) }
            current = String.UnicodeScalarView()
        }
        func copy(until terminator: [Unicode.Scalar]) {
            // Copies through the terminator (or to the end).
            while index < text.count {
                if text[index...].starts(with: terminator) {
                    current.append(contentsOf: terminator)
                    index += terminator.count
                    return
                }
                current.append(text[index])
                index += 1
            }
        }

        while index < text.count {
            let scalar = text[index]
            switch scalar {
            case ";":
                index += 1
                flush()
            case "'", "\"":
                current.append(scalar)
                index += 1
                copy(until: [scalar])
            case "-" where text[index...].starts(with: ["-", "-"]):
                copy(until: ["\n"])
            case "/" where text[index...].starts(with: ["/", "*"]):
                copy(until: ["*", "/"])
            case "$":
                // A dollar-quote tag: $$ or $identifier$.
                var end = index + 1
                while end < text.count, text[end] == "_" || text[end].properties.isAlphabetic || ("0"..."9").contains(text[end]) {
                    end += 1
                }
                if end < text.count, text[end] == "$" {
                    let tag = Array(text[index...end])
                    current.append(contentsOf: tag)
                    index = end + 1
                    copy(until: tag)
                } else {
                    current.append(scalar)
                    index += 1
                }
            default:
                current.append(scalar)
                index += 1
            }
        }
        flush()
        return statements
    }
}

extension String {
    fileprivate func trimmingWhitespace() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return String(scalars[first...last])
    }

    /// Whether every line is blank or a `--` comment.
    fileprivate var isOnlyComments: Bool {
        split(separator: "\n").allSatisfy { line in
            let trimmed = String(line).trimmingWhitespace()
            return trimmed.isEmpty || trimmed.hasPrefix("--")
        }
    }
}
