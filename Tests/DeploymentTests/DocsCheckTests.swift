import Foundation
import PaperboyTesting
import Testing

/// `scripts/check-docs.py` checks the docs' JSON and `curl` bodies against openapi.yaml: run on a copy of the
/// repository's openapi.yaml with docs written for the test.
@Suite("The docs check's examples")
struct DocsCheckTests {
    static let root = PaperboyBinary.repositoryRoot

    /// Runs the examples check on a root holding openapi.yaml and `readme` as README.md.
    static func check(readme: String) async throws -> CommandRun {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-docs-check-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("docs"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.copyItem(at: root.appendingPathComponent("openapi.yaml"), to: directory.appendingPathComponent("openapi.yaml"))
        try readme.write(to: directory.appendingPathComponent("README.md"), atomically: true, encoding: .utf8)
        return try await CommandRun.run(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["python3", root.appendingPathComponent("scripts/check-docs.py").path, "--examples-only", "--root", directory.path],
            environment: ProcessInfo.processInfo.environment
        )
    }

    /// The README's registration before issue 38: no `alertsAuthorized`, which the API requires.
    static let refused = """
        # App

        ```sh
        API=https://push.example.com KEY=pb_…
        curl -X PUT "$API/v1/devices/$APNS_TOKEN_HEX" -H "X-API-Key: $KEY" -H 'Content-Type: application/json' \\
          -d '{"environment": "production", "subscriptions": ["morning"], "timeZone": "Asia/Tokyo", "tier": "large", "autoDownload": true}'
        curl -X POST "$API/v1/devices/$APNS_TOKEN_HEX/receipts" -H "X-API-Key: $KEY" -H 'Content-Type: application/json' \\
          -d '{"editionId": "'$EDITION_ID'", "result": "newData", "bytes": 52428800, "seconds": 4.5, "wave": 1}'
        ```

        """

    @Test("a curl body the API refuses fails the check, naming the file, its line and the missing field")
    func refusedCurlBody() async throws {
        let run = try await Self.check(readme: Self.refused)
        #expect(run.status == 1, "\(run.output)")
        #expect(run.output.contains("README.md:5: curl: the body of PUT /v1/devices/{token} is refused by openapi.yaml"), "\(run.output)")
        #expect(run.output.contains("'alertsAuthorized' is a required property"), "\(run.output)")
        #expect(!run.output.contains("receipts"), "the receipt's body (its edition id spliced in by the shell) is valid: \(run.output)")
    }

    @Test("the same calls with alertsAuthorized pass")
    func acceptedCurlBody() async throws {
        let fixed = Self.refused.replacingOccurrences(of: #""autoDownload": true}"#, with: #""autoDownload": true, "alertsAuthorized": false}"#)
        let run = try await Self.check(readme: fixed)
        #expect(run.status == 0, "\(run.output)")
    }

    @Test("a JSON block must declare its schema and match it: an answer missing a required field, or an undeclared block, fails")
    func jsonBlocks() async throws {
        let readme = """
            <!-- schema: POST /v1/devices/{token}/receipts 201 -->
            ```json
            {"token": "8d4e0b1c9a7f3e2d5c6b4a3928170f6e5d4c3b2a19087f6e5d4c3b2a1908f7e6", "editionId": "0b4ed6a3-3c2e-4b8e-9a55-0d2f3f1b7c11",
             "result": "newData", "bytes": 1, "seconds": 1}
            ```

            ```json
            {"anything": true}
            ```

            """
        let run = try await Self.check(readme: readme)
        #expect(run.status == 1)
        #expect(run.output.contains("README.md:2: the JSON block is not the answer 201 of POST /v1/devices/{token}/receipts"), "\(run.output)")
        #expect(run.output.contains("'receivedAt' is a required property"), "\(run.output)")
        #expect(run.output.contains("README.md:7: the JSON block declares no schema"), "\(run.output)")
    }

    @Test("the repository's own README.md and docs/ pass")
    func repository() async throws {
        let run = try await CommandRun.run(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["python3", Self.root.appendingPathComponent("scripts/check-docs.py").path, "--examples-only"],
            environment: ProcessInfo.processInfo.environment
        )
        #expect(run.status == 0, "\(run.output)")
    }
}
