import Foundation

/// Whether a token typed by people (the console's, the admin API's) is too easy to guess: it is found only by
/// trying, and the first tries of anyone who tries are the short and the common ones.
public enum TokenStrength {
    /// The shortest token accepted.
    public static let minimumLength = 16

    /// Words that make up the tokens people choose when told to choose one; a token made of them and digits alone is
    /// common, however long.
    static let commonWords = [
        "password", "passwd", "changeme", "change", "admin", "administrator", "secret", "letmein", "qwerty", "asdf",
        "welcome", "paperboy", "token", "iloveyou", "default", "test", "operator", "viewer", "console", "root", "login",
        "master", "monkey", "dragon", "abc", "xyz", "example", "trustno",
        // What a newspaper's staff reach for first: the trade, the product, the seasons (issue 48: `Newspaper2024!!!`).
        "newspaper", "news", "paper", "edition", "morning", "evening", "daily", "press", "times", "herald", "journal",
        "gazette", "tribune", "post", "digital", "media", "spring", "summer", "autumn", "winter",
    ]

    /// Why `token` is refused, in words that never quote it; nil when it will do.
    public static func weakness(of token: String) -> String? {
        let suggestion = "e.g. `openssl rand -hex 24`"
        guard token.count >= minimumLength else {
            return "the token must be at least \(minimumLength) characters (\(suggestion))"
        }
        let characters = Array(token.lowercased().unicodeScalars)
        if Set(characters).count < 6 {
            return "the token repeats too few characters to be guessed only by trying: use a random one (\(suggestion))"
        }
        let steps = zip(characters, characters.dropFirst()).filter { abs(Int($0.value) - Int($1.value)) == 1 }.count
        if steps * 4 >= (characters.count - 1) * 3 {
            return "the token is a run of consecutive characters: use a random one (\(suggestion))"
        }
        var remainder = String(String.UnicodeScalarView(characters.filter { $0.properties.isAlphabetic || ("0"..."9").contains($0) }))
        var foundWord = false
        for word in commonWords.sorted(by: { $0.count > $1.count }) where remainder.contains(word) {
            foundWord = true
            remainder = remainder.replacingOccurrences(of: word, with: "")
        }
        remainder.removeAll { $0.isNumber }
        if foundWord, remainder.isEmpty {
            return "the token is made of common words and digits, among the first anyone tries: use a random one (\(suggestion))"
        }
        return nil
    }
}
