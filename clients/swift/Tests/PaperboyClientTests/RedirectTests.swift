import Foundation
import PaperboyClient
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Redirects: an API call (it carries the device key) follows none off its scheme, host and port; a bundle none from
/// https to http (its digest is checked, but a downgrade exposes what the reader reads). URLSession follows any.
@Suite("Requests: redirects")
struct RedirectTests {
    static func redirect(_ from: String, _ to: String) -> (HTTPURLResponse, URLRequest) {
        let response = HTTPURLResponse(url: URL(string: from)!, statusCode: 302, httpVersion: "HTTP/1.1", headerFields: ["Location": to])!
        return (response, URLRequest(url: URL(string: to)!))
    }

    @Test("an API call follows no redirect off its host or scheme; a bundle none from https to http")
    func redirects() {
        let api = "https://push.example.com/v1/devices/t/opens"
        #expect(RedirectPolicy.api.allows(from: URL(string: api)!, to: URL(string: "https://push.example.com/v1/devices/t/opens/")!))
        #expect(!RedirectPolicy.api.allows(from: URL(string: api)!, to: URL(string: "http://push.example.com/v1/devices/t/opens")!))
        #expect(!RedirectPolicy.api.allows(from: URL(string: api)!, to: URL(string: "https://evil.example.net/v1/devices/t/opens")!))
        #expect(!RedirectPolicy.api.allows(from: URL(string: api)!, to: URL(string: "https://push.example.com:8443/v1/x")!))
        let bundle = "https://cdn.example.com/2026-11-23/morning/large-1.zip"
        #expect(RedirectPolicy.bundle.allows(from: URL(string: bundle)!, to: URL(string: "https://edge-3.cdn.example.net/large-1.zip")!))
        #expect(!RedirectPolicy.bundle.allows(from: URL(string: bundle)!, to: URL(string: "http://edge-3.cdn.example.net/large-1.zip")!))
        #expect(!RedirectPolicy.bundle.allows(from: URL(string: bundle)!, to: URL(string: "ftp://cdn.example.com/large-1.zip")!))
    }

    @Test("URLSessionTransport's task delegate refuses the redirect (completion nil) that the policy refuses")
    func delegateRefuses() async {
        let session = URLSession(configuration: .ephemeral)
        let task = session.dataTask(with: URL(string: "https://push.example.com/v1/devices/t/opens")!)
        for (policy, to, followed) in [
            (RedirectPolicy.api, "http://push.example.com/v1/devices/t/opens", false),
            (.api, "https://evil.example.net/v1/devices/t/opens", false),
            (.api, "https://push.example.com/v1/devices/t/opens/", true),
        ] {
            let (response, request) = Self.redirect("https://push.example.com/v1/devices/t/opens", to)
            let next: URLRequest? = await withCheckedContinuation { done in
                RedirectGuard(policy).urlSession(session, task: task, willPerformHTTPRedirection: response, newRequest: request) {
                    done.resume(returning: $0)
                }
            }
            #expect((next != nil) == followed, "\(to)")
        }
        session.invalidateAndCancel()
    }
}
