import Crypto
import Foundation
import PaperboyStore
import PaperboyTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif

/// A full run of `paperboy serve` at LOG_LEVEL=trace: the admin token, the device API key, the APNs key and
/// the FCM service account's key never reach the log.
@Suite("Secrets never in logs")
struct SecretsInLogsTests {
    @Test(
        "serve at trace level logs neither the admin token, nor the device API key, nor the .p8 key",
        .enabled(if: PaperboyBinary.isBuilt, "the paperboy binary is built beside the tests")
    )
    func noSecretsInLogs() async throws {
        try await TestDatabase.with { db in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-secrets-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let log = directory.appendingPathComponent("all.log")
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            let output = try FileHandle(forWritingTo: log)

            let adminToken = "admin-" + UUID().uuidString.lowercased()
            let pem = P256.Signing.PrivateKey().pemRepresentation
            let keyFile = directory.appendingPathComponent("AuthKey_KEY1234567.p8")
            try Data(pem.utf8).write(to: keyFile)
            let keyBody = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()

            var environment = ProcessInfo.processInfo.environment
            environment["DATABASE_URL"] = db.configuration.testURL
            environment["PAPERBOY_ADMIN_TOKEN"] = adminToken
            environment["LOG_LEVEL"] = "trace"
            // Nothing listens there: sends fail, and the failures are logged too.
            environment["PAPERBOY_APNS_ENDPOINT"] = "http://127.0.0.1:9"

            func run(_ arguments: [String]) async throws -> String {
                let process = Process()
                process.executableURL = PaperboyBinary.url
                process.arguments = arguments
                process.environment = environment
                let pipe = Pipe()
                process.standardOutput = pipe
                process.standardError = output
                try process.run()
                let data = await onDedicatedThread { pipe.fileHandleForReading.readDataToEndOfFile() }
                try await process.exited()
                #expect(process.terminationStatus == 0, "paperboy \(arguments.joined(separator: " ")) failed")
                return String(decoding: data, as: UTF8.self)
            }
            let created = try await run([
                "apps", "add", "--bundle-id", "com.example.news", "--team-id", "TEAM123456", "--key-id", "KEY1234567",
                "--key-file", keyFile.path, "--json",
            ])
            let app = try #require(JSONSerialization.jsonObject(with: Data(created.utf8)) as? [String: Any])
            let apiKey = try #require(app["apiKey"] as? String)
            let appID = try #require(app["id"] as? Int)
            _ = try await run(["publications", "add", "morning", "--app", String(appID)])
            let serviceAccount = try ServiceAccountFile.write(in: directory, name: "firebase.json", projectID: "paperboy-news")
            let setFCM = try await run(["apps", "set-fcm", "--app", String(appID), "--service-account", serviceAccount.path])
            for line in serviceAccount.keyLines { #expect(!setFCM.contains(line), "a line of the service account's key was printed") }

            let serve = Process()
            serve.executableURL = PaperboyBinary.url
            serve.arguments = ["serve", "--port", "0", "--rate-limit", "100/s"]
            serve.environment = environment
            serve.standardOutput = output
            serve.standardError = output
            try serve.run()
            defer { if serve.isRunning { serve.terminate() } }
            let port = try #require(
                try await PaperboyBinary.waitForPort(in: log, process: serve),
                "serve did not start: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")"
            )
            let base = "http://127.0.0.1:\(port)"

            func request(_ method: String, _ path: String, headers: [String: String], body: String? = nil) async throws -> Int {
                var request = URLRequest(url: URL(string: base + path)!)
                request.httpMethod = method
                for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
                if let body {
                    request.httpBody = Data(body.utf8)
                    request.setValue("application/json", forHTTPHeaderField: "Content-Type")
                }
                let (_, response) = try await URLSession.shared.data(for: request)
                return (response as? HTTPURLResponse)?.statusCode ?? 0
            }
            let admin = ["Authorization": "Bearer \(adminToken)"]
            let device = ["X-API-Key": apiKey]
            let registration = validRegistration.replacingOccurrences(of: "production", with: "sandbox")
            #expect(try await request("PUT", "/v1/devices/\(token())", headers: device, body: registration) == 201)
            #expect(try await request("PUT", "/v1/devices/\(token("cd"))", headers: device, body: registration) == 201)
            #expect(try await request("PUT", "/v1/devices/\(fcmToken())", headers: device, body: fcmRegistration) == 201)
            #expect(try await request("POST", "/v1/editions", headers: admin, body: EditionRoutesTests.file()) == 201)
            #expect(try await request("GET", "/v1/editions/latest?publication=morning", headers: device) == 200)
            var start = URLRequest(url: URL(string: base + "/v1/broadcasts")!)
            start.httpMethod = "POST"
            start.setValue("Bearer \(adminToken)", forHTTPHeaderField: "Authorization")
            start.setValue("application/json", forHTTPHeaderField: "Content-Type")
            let (latest, _) = try await URLSession.shared.data(
                for: {
                    var get = URLRequest(url: URL(string: base + "/v1/editions/latest?publication=morning")!)
                    get.setValue(apiKey, forHTTPHeaderField: "X-API-Key")
                    return get
                }()
            )
            let edition = try #require((try JSONSerialization.jsonObject(with: latest) as? [String: Any])?["id"] as? String)
            start.httpBody = Data(#"{"edition": "\#(edition)", "window": 60, "environment": "sandbox"}"#.utf8)
            let (_, started) = try await URLSession.shared.data(for: start)
            #expect((started as? HTTPURLResponse)?.statusCode == 201)

            // Errors: wrong and malformed secrets, which a careless server might echo.
            #expect(try await request("GET", "/v1/devices/\(token())", headers: ["X-API-Key": apiKey + "x"]) == 401)
            #expect(try await request("GET", "/v1/apps", headers: ["Authorization": "Bearer \(adminToken)x"]) == 401)
            #expect(try await request("GET", "/v1/apps", headers: ["Authorization": adminToken]) == 401)
            #expect(try await request("PUT", "/v1/devices/\(token())", headers: device, body: "{\"broken\": \"\(apiKey)") == 400)
            #expect(try await request("GET", "/v1/devices/\(token())", headers: ["X-API-Key": adminToken]) == 401)

            // Let the dispatcher try to send (and fail against the closed port) for a moment.
            try await Task.sleep(for: .seconds(2))
            kill(serve.processIdentifier, SIGTERM)
            try await serve.exited()
            try output.close()

            let text = try String(contentsOf: log, encoding: .utf8)
            #expect(text.contains("listening"), "the log is the server's")
            #expect(text.contains("trace") || text.contains("debug"), "the log was written at trace level")
            #expect(!text.contains(adminToken), "the admin token is in the log")
            #expect(!text.contains(apiKey), "the device API key is in the log")
            #expect(!text.contains(keyBody), "the .p8 key is in the log")
            for line in pem.split(separator: "\n") where !line.hasPrefix("-----") {
                #expect(!text.contains(line), "a line of the .p8 key is in the log")
            }
            for line in serviceAccount.keyLines { #expect(!text.contains(line), "a line of the service account's key is in the log") }
        }
    }
}
