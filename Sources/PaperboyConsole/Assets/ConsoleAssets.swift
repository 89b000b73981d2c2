import Crypto
import Foundation
import Mustache

/// The console's templates, stylesheet and script, embedded in the binary (`scripts/embed-console.sh`), and the
/// paths they are served at.
///
/// The static files' paths carry a digest of their content (`/console/static/console-1a2b3c4d.css`), so a browser
/// may keep them for a year and still never runs an old script against a new page after an upgrade.
enum ConsoleAssets {
    /// The templates, parsed once. A template that does not parse is a bug the tests catch; the process stops
    /// with its name rather than serve pages without it.
    static let library: MustacheLibrary = {
        var library = MustacheLibrary()
        for (name, text) in bundledTemplates {
            do {
                try library.register(text, named: name)
            } catch {
                fatalError("console template \(name) does not parse: \(error)")
            }
        }
        return library
    }()

    struct StaticFile: Sendable {
        var path: String
        var contentType: String
        var body: String
    }

    static let stylesheet = StaticFile(
        path: path("console", "css", bundledStylesheet),
        contentType: "text/css; charset=utf-8",
        body: bundledStylesheet
    )
    static let script = StaticFile(
        path: path("console", "js", bundledScript),
        contentType: "text/javascript; charset=utf-8",
        body: bundledScript
    )

    /// The static file served at `name` (the last part of its path), if any.
    static func staticFile(named name: String) -> StaticFile? {
        [stylesheet, script].first { $0.path.hasSuffix("/" + name) }
    }

    private static func path(_ stem: String, _ ext: String, _ body: String) -> String {
        let digest = SHA256.hash(data: Array(body.utf8)).prefix(4).map { String(format: "%02x", $0) }.joined()
        return "/console/static/\(stem)-\(digest).\(ext)"
    }
}
