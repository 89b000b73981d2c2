import Foundation
import PaperboyTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `paperboy demo` as a process: what an operator who presses Ctrl-C (or a supervisor that sends SIGTERM)
/// is left with.
@Suite("paperboy demo, interrupted")
struct DemoCommandTests {
    @Test(
        "a signal ends the demo with status 130 and removes its throwaway APNs key, FCM service account and private PostgreSQL",
        .enabled(if: PaperboyBinary.isBuilt),
        .timeLimit(.minutes(3)),
        arguments: [SIGINT, SIGTERM]
    )
    func interrupted(signal: Int32) async throws {
        // A temporary directory of the demo's own (TMPDIR), so that what it leaves there can be seen. The
        // cluster's directory inside it is handed to the postgres user when the tests run as root.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("demo-signal-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        defer { try? FileManager.default.removeItem(at: directory) }
        let log = directory.appendingPathComponent("demo.log")
        let demo = try PaperboyBinary.start(
            ["demo", "--devices", "200", "--strategies", "waves"],
            environment: ["TMPDIR": directory.path, "DATABASE_URL": nil],
            log: log
        )
        defer { if demo.isRunning { demo.terminate() } }

        // Interrupt it once it is sending: its key files and its cluster are there then.
        func leftovers() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter { $0 != "demo.log" }.sorted()
        }
        var sending = false
        for _ in 0..<1200 where demo.isRunning {
            if (try? String(contentsOf: log, encoding: .utf8))?.contains("waves: demo time") == true {
                sending = true
                break
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(sending, "the demo did not start sending within 2 minutes: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
        let during = leftovers()
        #expect(during.contains { $0.hasPrefix("paperboy-demo-") && $0.hasSuffix(".p8") })
        #expect(during.contains { $0.hasPrefix("paperboy-demo-") && $0.hasSuffix(".json") })
        #expect(during.contains { $0.hasPrefix("paperboy-pg-") })

        kill(demo.processIdentifier, signal)
        let exited = await demo.exited(within: .seconds(60))
        #expect(exited, "the demo did not exit within a minute of the signal")
        #expect(demo.terminationStatus == 130)
        #expect(leftovers() == [], "left behind: \(leftovers())")
        let printed = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        #expect(printed.contains("paperboy demo: interrupted"))
        #expect(!printed.contains("PRIVATE KEY"))
    }
}
