import Foundation
import HTTPTypes
import Hummingbird
import Testing

@testable import PaperboyConsole

@Suite("The console's origin: cookie, forms, links")
struct ConsoleOriginTests {
    func request(host: String, proto: String? = nil) -> Request {
        var fields: HTTPFields = [HTTPField.Name("Host")!: host]
        if let proto { fields[HTTPField.Name("X-Forwarded-Proto")!] = proto }
        return Request(
            head: HTTPRequest(method: .get, scheme: "http", authority: host, path: "/console", headerFields: fields),
            body: .init(buffer: .init())
        )
    }

    @Test("the cookie is Secure and __Host- but for plain HTTP on this machine or a public URL that says http")
    func cookie() throws {
        let local = ConsoleOrigin.of(request(host: "127.0.0.1:8080"), publicURL: nil, servesTLS: false)
        #expect(!local.secureCookie && local.cookieName == "paperboy_console" && local.cookiePath == "/console")
        let proxied = ConsoleOrigin.of(request(host: "news.example.com", proto: "https"), publicURL: nil, servesTLS: false)
        #expect(proxied.secureCookie && proxied.cookieName == "__Host-paperboy_console" && proxied.cookiePath == "/")
        #expect(proxied.origin == "https://news.example.com")
        let plainRemote = ConsoleOrigin.of(request(host: "console.internal"), publicURL: nil, servesTLS: false)
        #expect(plainRemote.secureCookie && plainRemote.dropsItsCookie, "plain HTTP from afar: Secure all the same, and the page says why")
        let told = ConsoleOrigin.of(
            request(host: "127.0.0.1:8080"),
            publicURL: try ConsolePublicURL(parsing: "http://console.internal:8080"),
            servesTLS: false
        )
        #expect(!told.secureCookie && told.origin == "http://console.internal:8080")
        let tls = ConsoleOrigin.of(request(host: "10.0.0.5:8443"), publicURL: nil, servesTLS: true)
        #expect(tls.secureCookie && tls.origin == "https://10.0.0.5:8443")
    }

    @Test("a form's Origin must be the console's: scheme, host and port")
    func origins() throws {
        let origin = ConsoleOrigin.of(
            request(host: "news.example.com"),
            publicURL: try ConsolePublicURL(parsing: "https://news.example.com"),
            servesTLS: false
        )
        #expect(origin.accepts(origin: "https://news.example.com"))
        #expect(origin.accepts(origin: "https://news.example.com:443"))
        #expect(!origin.accepts(origin: "http://news.example.com"))
        #expect(!origin.accepts(origin: "https://news.example.com:8443"))
        #expect(!origin.accepts(origin: "https://evil.example"))
        #expect(!origin.accepts(origin: "garbage"))
        #expect(origin.link("/console/sign-in") == "https://news.example.com/console/sign-in")
    }

    @Test("--public-url is an origin: a path, a query or another scheme is refused, saying so")
    func publicURL() throws {
        #expect(try ConsolePublicURL(parsing: "https://News.Example.com/").description == "https://news.example.com")
        #expect(try ConsolePublicURL(parsing: "https://news.example.com:8443").authority == "news.example.com:8443")
        for text in ["news.example.com", "ftp://news.example.com", "https://news.example.com/paperboy", "https://news.example.com/?a=1"] {
            #expect(throws: ConsolePublicURLError.self, "\(text)") { try ConsolePublicURL(parsing: text) }
        }
    }
}
