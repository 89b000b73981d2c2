import Foundation
import PaperboyCore
import Testing

@Suite("The alerts' words")
struct EditionAlertTextTests {
    @Test("placeholders are filled per edition: the publication's title, the date and its parts as numbers")
    func filled() throws {
        let japanese = try EditionAlertText(title: "{publication}", body: "{year}年{month}月{day}日号を公開しました")
        let text = japanese.filled(publication: "朝刊", issueDate: "2026-01-05")
        #expect(text.title == "朝刊")
        #expect(text.body == "2026年1月5日号を公開しました")
        let french = try EditionAlertText(title: "{publication} du {day}/{month}/{year}", body: "L'édition du {date} est parue.")
        #expect(french.filled(publication: "Le Matin", issueDate: "2026-11-23").title == "Le Matin du 23/11/2026")
        #expect(french.filled(publication: "Le Matin", issueDate: "2026-11-23").body == "L'édition du 2026-11-23 est parue.")
    }

    @Test("the default is English and says the edition is out, not that it is ready")
    func standard() {
        let text = EditionAlertText.standard.filled(publication: "Morning edition", issueDate: "2026-11-23")
        #expect(text.title == "Morning edition")
        #expect(text.body == "The edition of 2026-11-23 is out. Open the app to read it.")
        #expect(!(text.title + text.body).lowercased().contains("ready"))
    }

    @Test("an unknown placeholder, an empty text or one too long once filled is refused, naming title or body")
    func refused() {
        let cases: [(String, String, String)] = [
            ("{publicaton}", "ok", "title"),
            ("ok", "  ", "body"),
            ("ok", String(repeating: "a", count: 380) + "{publication}", "body"),
            (String(repeating: "t", count: 161), "ok", "title"),
        ]
        for (title, body, field) in cases {
            #expect(throws: EditionAlertTextError.self) { try EditionAlertText(title: title, body: body) }
            do {
                _ = try EditionAlertText(title: title, body: body)
            } catch {
                #expect(error.field == field, "\(title) / \(body): \(error)")
            }
        }
        // A long publication title is cut, so that the limit checked holds.
        let text = EditionAlertText.standard.filled(publication: String(repeating: "P", count: 300), issueDate: "2026-11-23")
        #expect(text.title.utf8.count == 64)
    }
}
