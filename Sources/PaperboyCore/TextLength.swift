extension StringProtocol {
    /// The length as PostgreSQL's `length()` and JSON Schema's `maxLength` count it: Unicode code points, not the
    /// grapheme clusters `count` gives (a letter with three combining marks is one `Character` and four code points).
    public var codePoints: Int { unicodeScalars.count }

    /// At most `limit` code points of the text, cut at a code point (never inside one): what fits a column checked by
    /// `length(…) <= limit`.
    public func clipped(toCodePoints limit: Int) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in unicodeScalars.prefix(Swift.max(0, limit)) { scalars.append(scalar) }
        return String(scalars)
    }
}
