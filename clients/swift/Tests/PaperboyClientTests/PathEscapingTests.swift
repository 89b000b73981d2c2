import Foundation
import Testing

@testable import PaperboyClient

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The paths the client builds: a token's path segment is ASCII, every other byte of its UTF-8 percent-escaped, as
/// the Android client's (PushToken.pathSegment). Suspected (the allowed set is `CharacterSet.alphanumerics`, which holds
/// every script's letters and digits) and not a defect: `addingPercentEncoding(withAllowedCharacters:)` ignores the
/// allowed characters outside 7-bit ASCII (Apple documents it so; swift-foundation does the same), so `é` is `%C3%A9`.
/// The segment is checked itself, not only the request's URL (a newer `URL(string:)` repairs raw non-ASCII).
@Suite("Requests: non-ASCII path segments escaped")
struct PathEscapingTests {
    /// Logs each request's URL as sent, and answers 204.
    final class Recorder: HTTPTransport, @unchecked Sendable {
        let urls = Guarded<[String]>([])
        func data(for request: URLRequest) async throws -> (Data, URLResponse) {
            urls { $0.append(request.url?.absoluteString ?? "no URL") }
            return (Data(), HTTPURLResponse(url: request.url ?? URL(string: "https://x")!, statusCode: 204, httpVersion: nil, headerFields: nil)!)
        }
        func download(for request: URLRequest) async throws -> (URL, URLResponse) { throw CocoaError(.fileNoSuchFile) }
    }

    @Test("the segment itself is ASCII: non-ASCII letters and digits escaped as UTF-8 bytes")
    func segmentIsASCII() {
        #expect(PushToken.fcm("jeton-é:ü_1").pathSegment == "jeton-%C3%A9%3A%C3%BC_1")
        #expect(PushToken.fcm("数字٣").pathSegment == "%E6%95%B0%E5%AD%97%D9%A3")
        #expect(PushToken.fcm("cAbC-12:APA91b_x").pathSegment == "cAbC-12%3AAPA91b_x")
        #expect(PushToken.apns(Data([0x8d, 0x4e])).pathSegment == "8d4e")
    }

    @Test("a token with non-ASCII characters is percent-escaped as UTF-8 in the request's path")
    func nonASCIIToken() async throws {
        let recorder = Recorder()
        let api = PaperboyAPIClient(baseURL: URL(string: "https://push.example.com")!, apiKey: "pb_test", transport: recorder)
        try await api.reportOpen(.fcm("jeton-é:ü_1"))
        try await api.reportOpen(.fcm("数字"))
        #expect(
            recorder.urls { $0 } == [
                "https://push.example.com/v1/devices/jeton-%C3%A9%3A%C3%BC_1/opens",
                "https://push.example.com/v1/devices/%E6%95%B0%E5%AD%97/opens",
            ]
        )
    }
}
