import Foundation
import PaperboyCore
import PaperboyStore
import PaperboyTesting
import Testing

/// Every curl an app team copies from README.md ("Integrating an app") and docs/app-integration.md, run as
/// printed (bash, with the placeholders' values set in the environment) against a live `paperboy serve`: each
/// answers as the docs say. An answer shown after a command (`<!-- schema: METHOD /path STATUS -->` before its
/// JSON) must come with that status and the same fields and values, but for ids and times; a command without
/// one must succeed. A block marked `<!-- not run: why -->` is left out (it needs a file of the reader's).
@Suite("The docs' app calls against paperboy serve")
struct DocExamplesTests {
    static let root = PaperboyBinary.repositoryRoot

    /// A shell command the docs show, and the answer they show after it, if any.
    struct Call {
        var line: Int
        var answer: (status: Int, json: String)?
    }

    /// The doc's shell blocks with `curl`, as one script (placeholder assignments left out: the environment sets
    /// them), and its calls in order.
    static func script(_ path: String) throws -> (script: String, calls: [Call]) {
        let lines = try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8).components(separatedBy: "\n")
        var script: [String] = []
        var calls: [Call] = []
        var index = 0
        var previous = ""
        while index < lines.count {
            let line = lines[index]
            guard line.hasPrefix("```") else {
                if !line.trimmingCharacters(in: .whitespaces).isEmpty { previous = line }
                index += 1
                continue
            }
            let language = line.dropFirst(3).trimmingCharacters(in: .whitespaces)
            let marker = previous
            var block: [(Int, String)] = []
            index += 1
            while index < lines.count, !lines[index].hasPrefix("```") {
                block.append((index + 1, lines[index]))
                index += 1
            }
            index += 1
            previous = ""
            // A block marked `<!-- not run: why -->` needs what only the reader has (a file of theirs).
            if ["sh", "bash", "shell"].contains(language), !marker.hasPrefix("<!-- not run"),
                block.contains(where: { $0.1.trimmingCharacters(in: .whitespaces).hasPrefix("curl ") })
            {
                for (number, text) in block {
                    if text.range(of: #"^\s*([A-Z_]+=\S*\s*)+(#.*)?$"#, options: .regularExpression) != nil { continue }
                    if text.trimmingCharacters(in: .whitespaces).hasPrefix("curl ") { calls.append(Call(line: number)) }
                    script.append(text)
                }
            } else if language == "json", !calls.isEmpty, calls[calls.count - 1].answer == nil,
                let range = marker.range(of: #"<!-- schema: (GET|PUT|POST|DELETE) \S+ (\d{3}) -->"#, options: .regularExpression)
            {
                let status = Int(marker[range].split(separator: " ")[4])!
                calls[calls.count - 1].answer = (status, block.map(\.1).joined(separator: "\n"))
            }
        }
        return (script.joined(separator: "\n"), calls)
    }

    /// Runs `path`'s calls against `serve`; answers each call's status and body.
    static func run(_ path: String, serve: LiveServe, environment: [String: String]) async throws -> [(status: Int, body: String)] {
        let (script, calls) = try Self.script(path)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-docs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // The commands as printed; curl itself wrapped to keep each answer's status and body.
        let wrapped = """
            set -u
            n=0
            curl() { command curl "$@" -sS --max-time 10 -o "$OUT/body.$n" -w '%{http_code}' > "$OUT/status.$n"; n=$((n+1)); }
            \(script)
            """
        try wrapped.write(to: directory.appendingPathComponent("calls.sh"), atomically: true, encoding: .utf8)
        var merged = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        merged["OUT"] = directory.path
        merged["API"] = serve.base.absoluteString
        merged["KEY"] = serve.key
        let run = try await CommandRun.run(
            URL(fileURLWithPath: "/bin/bash"),
            [directory.appendingPathComponent("calls.sh").path],
            environment: merged
        )
        #expect(run.status == 0, "\(path): the commands failed: \(run.output)")
        var answers: [(Int, String)] = []
        for index in 0..<calls.count {
            let status = (try? String(contentsOf: directory.appendingPathComponent("status.\(index)"), encoding: .utf8)) ?? "0"
            let body = (try? String(contentsOf: directory.appendingPathComponent("body.\(index)"), encoding: .utf8)) ?? ""
            answers.append((Int(status) ?? 0, body))
        }
        return answers
    }

    /// Fields whose values the server makes (ids, times) or that follow the edition's date: compared by presence.
    static let madeByTheServer: Set<String> = [
        "id", "editionId", "appId", "issueDate", "deadline", "registeredAt", "updatedAt", "receivedAt", "publishedAt", "deletedAt",
    ]

    /// The differences between a documented answer and the real one: keys on one side only, and values that
    /// differ (but for `madeByTheServer`).
    static func differences(documented: Any, actual: Any, at path: String = "") -> [String] {
        switch (documented, actual) {
        case let (documented as [String: Any], actual as [String: Any]):
            var found: [String] = []
            for key in Set(documented.keys).union(actual.keys).sorted() {
                let at = path.isEmpty ? key : "\(path).\(key)"
                switch (documented[key], actual[key]) {
                case (nil, _): found.append("\(at): answered but not documented")
                case (_, nil): found.append("\(at): documented but not answered")
                case (let left?, let right?):
                    if !madeByTheServer.contains(key) { found += differences(documented: left, actual: right, at: at) }
                }
            }
            return found
        case let (documented as [Any], actual as [Any]):
            guard documented.count == actual.count else { return ["\(path): \(documented.count) items documented, \(actual.count) answered"] }
            return zip(documented, actual).enumerated().flatMap { differences(documented: $1.0, actual: $1.1, at: "\(path)[\($0)]") }
        default:
            let left = "\(documented)"
            let right = "\(actual)"
            return left == right ? [] : ["\(path): documented \(left), answered \(right)"]
        }
    }

    /// The guide's example edition (its answer to `GET /v1/editions/{id}`), published for a day after LiveServe's own.
    static func guideEdition() throws -> PaperboyCore.EditionManifest {
        let (_, calls) = try script("docs/app-integration.md")
        let json = try #require(
            calls.compactMap(\.answer).first { $0.json.contains("\"tiers\"") }?.json,
            "the guide shows an edition's answer"
        )
        var manifest = try JSONDecoder().decode(PaperboyCore.EditionManifest.self, from: Data(json.utf8))
        (manifest.issueDate, manifest.deadline) = LiveServe.ahead(days: 3)
        return manifest
    }

    static func publish(_ manifest: PaperboyCore.EditionManifest, serve: LiveServe) async throws -> String {
        let edition = try await EditionRepository(client: serve.database.client).publish(
            manifest,
            appID: serve.appID,
            logger: serve.database.logger
        )
        return edition.id.uuidString.lowercased()
    }

    @Test(
        "README's four app calls: register 201, the edition 200, the receipt 201, the removal 204",
        .enabled(if: PaperboyBinary.isBuilt, "the paperboy binary is built beside the tests")
    )
    func readme() async throws {
        try await LiveServe.with { serve in
            let editionID = try await Self.publish(try Self.guideEdition(), serve: serve)
            let answers = try await Self.run(
                "README.md",
                serve: serve,
                environment: ["APNS_TOKEN_HEX": String(repeating: "5e", count: 32), "EDITION_ID": editionID]
            )
            #expect(answers.map(\.status) == [201, 200, 201, 204], "\(answers)")
            let (script, _) = try Self.script("README.md")
            for status in ["201 created, 200 updated", "(200)", "201 the first, 200 after", "(204"] {
                #expect(script.contains(status), "the README's comments say \(status)")
            }
        }
    }

    @Test(
        "docs/app-integration.md's curl examples answer as the guide shows",
        .enabled(if: PaperboyBinary.isBuilt, "the paperboy binary is built beside the tests")
    )
    func guide() async throws {
        try await LiveServe.with { serve in
            let editionID = try await Self.publish(try Self.guideEdition(), serve: serve)
            let (_, calls) = try Self.script("docs/app-integration.md")
            #expect(calls.count >= 5, "the guide's calls: \(calls.map(\.line))")
            // The token of the guide's example answers, so that they match.
            let tokens = calls.compactMap(\.answer).compactMap { answer -> String? in
                (try? JSONSerialization.jsonObject(with: Data(answer.json.utf8)) as? [String: Any])?["token"] as? String
            }
            let token = try #require(tokens.first)
            let answers = try await Self.run(
                "docs/app-integration.md",
                serve: serve,
                environment: [
                    "TOKEN": token, "EDITION_ID": editionID,
                    "FCM_TOKEN": "cAbC-12_dEf:APA91bHk" + String(repeating: "Q", count: 130),
                ]
            )
            for (call, answer) in zip(calls, answers) {
                guard let documented = call.answer else {
                    #expect((200..<300).contains(answer.status), "app-integration.md:\(call.line): \(answer.status) \(answer.body)")
                    continue
                }
                #expect(answer.status == documented.status, "app-integration.md:\(call.line): \(answer.status) \(answer.body)")
                let expected = try JSONSerialization.jsonObject(with: Data(documented.json.utf8))
                let actual = try JSONSerialization.jsonObject(with: Data(answer.body.utf8))
                let found = Self.differences(documented: expected, actual: actual)
                #expect(found.isEmpty, "app-integration.md:\(call.line): the documented answer differs: \(found)")
            }
        }
    }
}
