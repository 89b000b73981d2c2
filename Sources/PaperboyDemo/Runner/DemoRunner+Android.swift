import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

extension DemoRunner {
    /// Registers Android devices as the app would: `PUT /v1/devices/{token}` with provider fcm and platform
    /// android, 32 at a time. Tiers are split 20/30/50 % small/medium/large like the seeded iOS fleet.
    ///
    /// - Throws: ``DemoError`` with the status and body of a registration the API refused.
    func registerAndroid(tokens: [String], http: HTTPClient, apiBase: String, apiKey: String) async throws {
        let concurrency = 32
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (position, token) in tokens.enumerated() {
                if position >= concurrency { try await group.next() }
                group.addTask {
                    let tier = position % 10 < 2 ? "small" : position % 10 < 5 ? "medium" : "large"
                    var request = HTTPClientRequest(url: apiBase + "/v1/devices/\(token)")
                    request.method = .PUT
                    request.headers.add(name: "X-API-Key", value: apiKey)
                    request.headers.add(name: "Content-Type", value: "application/json")
                    let body = """
                        {"provider": "fcm", "platform": "android", "subscriptions": ["morning"], "timeZone": "Asia/Tokyo", \
                        "tier": "\(tier)", "autoDownload": true, "alertsAuthorized": false}
                        """
                    request.body = .bytes(ByteBuffer(string: body))
                    let response = try await http.execute(request, timeout: .seconds(60))
                    let answer = try await response.body.collect(upTo: 1 << 16)
                    guard (200..<300).contains(response.status.code) else {
                        throw DemoError("PUT /v1/devices/{token} (Android) answered \(response.status.code): \(String(buffer: answer))")
                    }
                }
            }
            try await group.waitForAll()
        }
    }
}
