import Foundation
import Hummingbird
import Mustache
import PaperboyText

/// What every page shows around its content: the title, who is signed in, the navigation, the CSRF token its forms
/// carry, the static files.
struct Frame: Sendable {
    struct NavItem: Sendable {
        var label: String
        var href: String
        var current: Bool
    }

    var signedIn: Bool
    var who: String?
    var isOperator: Bool
    var csrf: String?
    var css = ConsoleAssets.stylesheet.path
    var js = ConsoleAssets.script.path
    var nav: [NavItem] = []
    var flash: String?

    /// The sections of the console, the one at `current` marked.
    static let sections: [(label: String, href: String)] = [
        ("Broadcasts", "/console/broadcasts"), ("Plan and start", "/console/plan"), ("Device", "/console/devices"),
        ("Apps", "/console/apps"), ("Workers", "/console/workers"), ("Audit", "/console/audit"),
    ]

    init(session: ConsoleSession?, csrf: String?, current: String? = nil, flash: String? = nil) {
        self.signedIn = session != nil
        self.who = session?.who
        self.isOperator = session?.role.mayAct ?? false
        self.csrf = csrf
        self.flash = flash
        self.nav = session == nil ? [] : Self.sections.map { NavItem(label: $0.label, href: $0.href, current: $0.href == current) }
    }
}

/// Renders templates into responses.
enum ConsolePage {
    /// The template `name` rendered with `model`, as an HTML response.
    static func render(_ name: String, _ model: Any, status: HTTPResponse.Status = .ok) -> Response {
        let html = ConsoleAssets.library.render(model, withTemplate: name) ?? "template \(name) is missing"
        return Response(
            status: status,
            headers: [.contentType: "text/html; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(string: html))
        )
    }

    /// `text` rendered by the template `name` alone (a part of a page, for live updates).
    static func fragment(_ name: String, _ model: Any) -> String {
        ConsoleAssets.library.render(model, withTemplate: name) ?? ""
    }

    /// A redirect after a form (303: the browser follows with GET).
    static func redirect(to location: String) -> Response {
        Response(status: .seeOther, headers: [.location: location])
    }
}

/// A page that answers with an error: its status and what the person should know.
struct ConsolePageError: Error, Sendable {
    var status: HTTPResponse.Status
    var heading: String
    var message: String
    /// Seconds to wait before trying again (a 429), sent as `Retry-After`.
    var retryAfter: Int?

    init(status: HTTPResponse.Status, heading: String, message: String) {
        self.status = status
        self.heading = heading
        self.message = message
    }

    static func notFound(_ message: String) -> ConsolePageError {
        ConsolePageError(status: .notFound, heading: "Not found", message: message)
    }

    static func badRequest(_ message: String) -> ConsolePageError {
        ConsolePageError(status: .badRequest, heading: "Not accepted", message: message)
    }

    static func forbidden(_ message: String) -> ConsolePageError {
        ConsolePageError(status: .forbidden, heading: "Refused", message: message)
    }
}

/// The model of ``ConsolePageError``'s page, `message.mustache`.
struct MessagePage: Sendable {
    struct Link: Sendable {
        var href: String
        var label: String
    }

    var frame: Frame
    var heading: String
    var message: String
    var kind: String
    var link: Link?
}

/// Numbers and reasons as the pages show them.
enum Numbers {
    static func grouped(_ value: Int) -> String { TerminalText.grouped(value) }

    /// `45%`, rounded down so that 100% means all done; `-` when nothing was planned.
    static func percent(done: Int, of planned: Int) -> String {
        guard planned > 0 else { return "-" }
        return "\(min(100, max(0, Int((Double(done) / Double(planned) * 100).rounded(.down)))))%"
    }

    /// `Unregistered 1,200, BadDeviceToken 3`: the largest count first, equal counts by name; empty for none.
    static func tally(_ counts: [String: Int]) -> String {
        counts.filter { $0.value != 0 }
            .sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
            .map { "\($0.key) \(TerminalText.grouped($0.value))" }
            .joined(separator: ", ")
    }

    /// `12.5` or `2,000`: a rate without needless decimals.
    static func rate(_ perSecond: Double) -> String {
        perSecond.rounded() == perSecond && perSecond.magnitude < 1e12 ? TerminalText.grouped(Int(perSecond)) : String(format: "%.1f", perSecond)
    }

    /// `45.2%` of a share 0…1.
    static func share(_ value: Double) -> String {
        value.isFinite ? String(format: "%.1f%%", value * 100) : "-"
    }
}
