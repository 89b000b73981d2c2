import Foundation
import PaperboyClient
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Against a real HTTP server (python3's, on 127.0.0.1, two requests at most): the API client through
/// `URLSessionTransport` as an app uses it. The server answers an open report with a 307 to `localhost` (another host)
/// and the report there with 204. On iOS the task delegate refuses the redirect (the 307 is the answer); Linux's
/// FoundationNetworking does not consult it and follows, and the transport refuses the answer after the fact.
@Suite("Requests: redirects through URLSession, against a local server")
struct RedirectServerTests {
    static let script = """
        import http.server, sys
        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a): pass
            def do_POST(self):
                port = self.server.server_address[1]
                if self.path.endswith('/opens') and self.headers.get('Host', '').startswith('127.0.0.1'):
                    self.send_response(307); self.send_header('Location', 'http://localhost:%d/landed' % port)
                elif self.path.endswith('/same'):
                    self.send_response(307); self.send_header('Location', '/landed')
                else:
                    self.send_response(204)
                self.send_header('Content-Length', '0'); self.end_headers()
        s = http.server.HTTPServer(('127.0.0.1', 0), H)
        s.timeout = 10
        print(s.server_address[1], flush=True)
        for _ in range(2): s.handle_request()
        """

    @Test("an open report redirected off the API's host is not taken as reported")
    func offHostRefused() async throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") else { return }
        let server = Process()
        server.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        server.arguments = ["-c", Self.script]
        let output = Pipe()
        server.standardOutput = output
        server.standardError = FileHandle.nullDevice
        server.standardInput = FileHandle.nullDevice
        try server.run()
        defer { server.terminate() }
        let line = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
        let port = try #require(Int(line.trimmingCharacters(in: .whitespacesAndNewlines)))
        let session = URLSession(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let api = PaperboyAPIClient(baseURL: URL(string: "http://127.0.0.1:\(port)")!, apiKey: "pb_test", session: session, timeout: 5)
        do {
            try await api.reportOpen(.fcm("t"))
            Issue.record("followed the redirect to localhost:\(port)")
        } catch {
            let status = (error as? PaperboyAPIError)?.status
            #expect(status == 307 || "\(error)".contains("redirect"), "\(error)")
        }
    }
}
