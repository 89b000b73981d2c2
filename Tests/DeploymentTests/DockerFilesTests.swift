import Foundation
import PaperboyTesting
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `docker/Dockerfile`, `docker/compose.yaml` and `docker/entrypoint.sh`, checked without a Docker engine:
/// the files parse, the paths they name exist, every `paperboy` command and flag they run or document is
/// one the CLI has, and no secret is baked in.
@Suite("Docker files")
struct DockerFilesTests {
    static let root = PaperboyBinary.repositoryRoot
    static let dockerDirectory = root.appendingPathComponent("docker")
    static let composeURL = dockerDirectory.appendingPathComponent("compose.yaml")
    static let dockerfileURL = dockerDirectory.appendingPathComponent("Dockerfile")
    static let entrypointURL = dockerDirectory.appendingPathComponent("entrypoint.sh")

    static let binary = PaperboyBinary.url
    static var binaryBuilt: Bool { PaperboyBinary.isBuilt }

    /// Variables that hold secrets: they may be passed through (`${VAR}`) but never given a value.
    static let secretVariables: Set<String> = [
        "PAPERBOY_ADMIN_TOKEN", "PGPASSWORD", "POSTGRES_PASSWORD", "DATABASE_URL", "GF_SECURITY_ADMIN_PASSWORD",
    ]

    // MARK: compose.yaml

    @Test("compose.yaml: services, secrets and volumes declared and consistent")
    func composeStructure() throws {
        let compose = try Self.loadCompose()
        let top = try #require(compose.map)
        #expect(Set(top.keys).isSuperset(of: ["services", "secrets", "volumes"]))
        #expect(Set(top.keys).isSubset(of: ["name", "services", "secrets", "volumes", "networks", "configs"]), "unknown top-level key")

        let services = try #require(top["services"]?.map)
        let declaredSecrets = try #require(top["secrets"]?.map)
        let declaredVolumes = Set((top["volumes"]?.map ?? [:]).keys)
        #expect(Set(services.keys).isSuperset(of: ["postgres", "migrate", "serve", "worker"]))

        for (name, secret) in declaredSecrets {
            let file = secret["file"]?.scalar
            let environment = secret["environment"]?.scalar
            #expect((file == nil) != (environment == nil), "secret \(name): exactly one of file or environment")
            if let file {
                #expect(file.hasPrefix("./secrets/"), "secret \(name): kept in docker/secrets/, which .dockerignore excludes")
            }
        }

        for (name, service) in services {
            #expect(service["image"] != nil || service["build"] != nil, "service \(name): image or build")
            if let build = service["build"] {
                let context = Self.dockerDirectory.appendingPathComponent(try #require(build["context"]?.scalar)).standardizedFileURL
                #expect(context.path == Self.root.standardizedFileURL.path, "service \(name): the build context is the repository root")
                let dockerfile = context.appendingPathComponent(try #require(build["dockerfile"]?.scalar))
                #expect(dockerfile.standardizedFileURL.path == Self.dockerfileURL.standardizedFileURL.path, "service \(name): docker/Dockerfile")
            }

            // depends_on: existing services, known conditions; service_healthy needs a health check.
            for (dependency, condition) in Self.dependencies(of: service) {
                let target = services[dependency]
                #expect(target != nil, "service \(name) depends on unknown service \(dependency)")
                #expect(["service_started", "service_healthy", "service_completed_successfully"].contains(condition))
                if condition == "service_healthy", let target {
                    #expect(target["healthcheck"]?["test"] != nil, "service \(name) waits for \(dependency) to be healthy, which has no health check")
                }
            }

            // secrets: declared at the top level; /run/secrets paths in the environment are mounted.
            let mounted = try Self.secretMounts(of: service)
            for (source, _) in mounted {
                #expect(declaredSecrets[source] != nil, "service \(name) uses undeclared secret \(source)")
            }
            let environment = service["environment"]?.map ?? [:]
            for (key, value) in environment {
                let text = value.scalar ?? ""
                if text.hasPrefix("/run/secrets/") {
                    let file = String(text.dropFirst("/run/secrets/".count))
                    #expect(mounted.contains { $0.target == file }, "service \(name): \(key) names /run/secrets/\(file), which it does not mount")
                }
                if Self.secretVariables.contains(key) {
                    #expect(Self.isPassThrough(text), "service \(name): \(key) has a value in compose.yaml; use a secret or ${\(key)}")
                }
            }

            // named volumes: declared at the top level.
            for volume in service["volumes"]?.list ?? [] {
                let text = volume.scalar ?? volume["source"]?.scalar ?? ""
                let source = String(text.split(separator: ":", maxSplits: 1).first ?? "")
                if !source.isEmpty, !source.hasPrefix("."), !source.hasPrefix("/"), !source.hasPrefix("~") {
                    #expect(declaredVolumes.contains(source), "service \(name) uses undeclared volume \(source)")
                }
            }
        }

        // PostgreSQL: a password file, a volume, pg_isready.
        let postgres = try #require(services["postgres"])
        #expect(postgres["image"]?.scalar?.hasPrefix("postgres:") == true)
        #expect(postgres["environment"]?["POSTGRES_PASSWORD_FILE"]?.scalar == "/run/secrets/postgres_password")
        #expect(postgres["healthcheck"]?["test"]?.list?.contains { $0.scalar == "pg_isready" } == true)

        // migrate runs once; serve and worker start after it succeeded.
        let migrate = try #require(services["migrate"])
        #expect(Self.command(of: migrate).first == "migrate")
        #expect(migrate["restart"]?.scalar == "no")
        for name in ["serve", "worker"] {
            let service = try #require(services[name])
            #expect(Self.dependencies(of: service)["migrate"] == "service_completed_successfully", "\(name) waits for migrate")
            #expect(try Self.secretMounts(of: service).contains { $0.source == "apns_key" && $0.target == "apns_key.p8" })
        }
        let serve = try #require(services["serve"])
        #expect(Self.command(of: serve).first == "serve")
        #expect(try Self.secretMounts(of: serve).contains { $0.source == "admin_token" })
        #expect(serve["environment"]?["PAPERBOY_ADMIN_TOKEN_FILE"]?.scalar == "/run/secrets/admin_token")
        #expect(serve["ports"]?.list?.contains { $0.scalar?.hasSuffix(":8080") == true } == true)
        let worker = try #require(services["worker"])
        #expect(Self.command(of: worker).first == "worker")
        #expect(Int(worker["deploy"]?["replicas"]?.scalar ?? "") ?? 0 >= 1, "a second worker")

        // Each paperboy service's health check probes the port its command listens on.
        for name in ["serve", "worker"] {
            let service = try #require(services[name])
            let command = Self.command(of: service)
            let port = try #require(command.firstIndex(of: "--port").map { command[$0 + 1] }, "\(name) listens on a --port")
            let test = service["healthcheck"]?["test"]?.list?.compactMap(\.scalar) ?? []
            #expect(test.first == "CMD" && test.dropFirst().first == "curl", "\(name): curl, which the image installs")
            #expect(test.contains("http://127.0.0.1:\(port)/health/ready"), "\(name): probes /health/ready on --port \(port)")
        }
    }

    @Test(".env.example sets only variables that compose.yaml reads, and no secrets")
    func envExample() throws {
        let compose = try String(contentsOf: Self.composeURL, encoding: .utf8)
        let example = try String(contentsOf: Self.dockerDirectory.appendingPathComponent(".env.example"), encoding: .utf8)
        let variables = example.split(separator: "\n")
            .map { $0.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "# ", with: "") }
            .compactMap { line in line.range(of: #"^[A-Z][A-Z0-9_]*="#, options: .regularExpression).map { String(line[$0].dropLast()) } }
        #expect(variables.count >= 3)
        for variable in variables {
            #expect(compose.contains("${\(variable)"), "compose.yaml reads \(variable)")
            #expect(!Self.secretVariables.contains(variable))
        }
    }

    @Test("compose.yaml: PyYAML reads it as the test's own reader does", .enabled("python3 with PyYAML") { await pyYAMLAvailable })
    func composeAgreesWithPyYAML() async throws {
        let ours = try Self.loadCompose()
        let python = try await CommandRun.run(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["python3", "-c", Self.pyYAMLScript, Self.composeURL.path],
            environment: ProcessInfo.processInfo.environment
        )
        #expect(python.status == 0, "\(python.output)")
        let json = try JSONSerialization.jsonObject(with: Data(python.output.utf8))
        #expect(try YAMLNode(json: json) == ours)
    }

    // MARK: Dockerfile

    @Test("Dockerfile: a build stage, a slim non-root runtime stage, a health check, paths that exist")
    func dockerfile() async throws {
        let instructions = try Self.loadDockerfile()
        let stages = instructions.split(before: { $0.keyword == "FROM" })
        try #require(stages.count >= 2, "a build stage and a runtime stage")
        let build = stages[0]
        let runtime = stages[stages.count - 1]

        let buildFrom = build[0].arguments.split(separator: " ").map(String.init)
        #expect(buildFrom.first?.hasPrefix("swift:6.") == true, "the official Swift 6 image")
        #expect(buildFrom.suffix(2).map { $0.lowercased() } == ["as", "build"])
        let buildRuns = build.filter { $0.keyword == "RUN" }.map(\.arguments)
        #expect(buildRuns.contains { $0.contains("swift build -c release --product paperboy") && $0.contains("--static-swift-stdlib") })
        #expect(try String(contentsOf: Self.root.appendingPathComponent("Package.swift"), encoding: .utf8).contains(#".executable(name: "paperboy""#))

        let runtimeImage = runtime[0].arguments.split(separator: " ").first.map(String.init) ?? ""
        #expect(!runtimeImage.hasPrefix("swift"), "runs on a slim image, not the toolchain")
        let user = try #require(runtime.last { $0.keyword == "USER" }, "a USER in the runtime stage").arguments
        #expect(!["root", "0"].contains(String(user.split(separator: ":").first ?? "")), "not root")
        let healthcheck = try #require(runtime.first { $0.keyword == "HEALTHCHECK" }, "a HEALTHCHECK").arguments
        #expect(healthcheck.contains("/health/"))
        let installs = runtime.filter { $0.keyword == "RUN" }.map(\.arguments).joined(separator: "\n")
        #expect(!healthcheck.contains("curl") || installs.contains("curl"), "the health check's curl is installed")

        // COPY from the build context: the sources exist and .dockerignore lets them through.
        let ignored = try Self.dockerignorePatterns()
        var copied: [String] = []
        for copy in instructions where copy.keyword == "COPY" || copy.keyword == "ADD" {
            let words = copy.arguments.split(separator: " ").map(String.init)
            let fromStage = words.contains { $0.hasPrefix("--from=") }
            let paths = words.filter { !$0.hasPrefix("--") }
            let sources = paths.dropLast()
            for source in sources {
                #expect(!source.hasSuffix(".p8") && !source.hasSuffix(".pem") && !source.contains("secrets"), "no key or secret copied: \(source)")
                if fromStage {
                    let producedInBuild = build.contains { $0.arguments.contains(source) }
                    #expect(producedInBuild, "\(source) is made in the build stage")
                    continue
                }
                copied.append(source)
                if source.contains("*") {
                    let parent = (source as NSString).deletingLastPathComponent
                    #expect(FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(parent.isEmpty ? "." : parent).path))
                } else {
                    #expect(FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(source).path), "\(source) is in the repository")
                    #expect(
                        Self.ignoredBy(ignored, source) == nil,
                        "\(source) is excluded by .dockerignore pattern \(Self.ignoredBy(ignored, source) ?? "")"
                    )
                }
            }
        }
        #expect(copied.contains("Package.swift") && copied.contains("Sources"))
        // Dependencies resolve before the sources arrive (cache-friendly order).
        let order = build.map { "\($0.keyword) \($0.arguments)" }
        let resolve = order.firstIndex { $0.contains("swift package resolve") }
        let sources = order.firstIndex { $0.hasPrefix("COPY Sources") }
        #expect(resolve != nil && sources != nil && resolve! < sources!)

        // The entrypoint is copied in and is valid POSIX sh.
        let entrypoint = try #require(runtime.last { $0.keyword == "ENTRYPOINT" }).arguments
        let entrypointPath = try #require(Self.jsonArray(entrypoint)?.first)
        #expect(
            runtime.contains { $0.keyword == "COPY" && $0.arguments.hasSuffix(" \(entrypointPath)") && $0.arguments.contains("docker/entrypoint.sh") }
        )
        let syntax = try await CommandRun.run(URL(fileURLWithPath: "/bin/sh"), ["-n", Self.entrypointURL.path], environment: [:])
        #expect(syntax.status == 0, "\(syntax.output)")

        // CMD serves on the port that is exposed and health-checked.
        let cmd = try #require(runtime.last { $0.keyword == "CMD" })
        let command = try #require(Self.jsonArray(cmd.arguments))
        let port = try #require(command.firstIndex(of: "--port").map { command[$0 + 1] })
        #expect(runtime.contains { $0.keyword == "EXPOSE" && $0.arguments.split(separator: " ").contains(Substring(port)) })
        #expect(healthcheck.contains("127.0.0.1:\(port)/"))

        // Nothing secret in ENV or ARG.
        for instruction in instructions where instruction.keyword == "ENV" || instruction.keyword == "ARG" {
            for variable in Self.secretVariables {
                #expect(!instruction.arguments.contains(variable), "\(instruction.keyword) \(instruction.arguments): secrets come at run time")
            }
        }
    }

    @Test(".dockerignore keeps build products, git and secrets out of the build context")
    func dockerignore() throws {
        let patterns = try Self.dockerignorePatterns()
        for path in [".build", ".build-release", ".git", "docker/secrets", "docker/secrets/admin_token", "Sources/AuthKey_ABC.p8"] {
            #expect(Self.ignoredBy(patterns, path) != nil, "\(path) is ignored")
        }
    }

    // MARK: the CLI

    @Test(
        "every paperboy command and flag that the docker files run or document exists in the CLI",
        .enabled(if: binaryBuilt, "the paperboy binary is built beside the tests")
    )
    func commandsMatchTheCLI() async throws {
        var commands: [(origin: String, arguments: [String])] = []

        let compose = try Self.loadCompose()
        for (name, service) in compose["services"]?.map ?? [:] where service["build"] != nil {
            commands.append(("compose.yaml service \(name)", Self.command(of: service)))
        }
        let instructions = try Self.loadDockerfile()
        if let cmd = instructions.last(where: { $0.keyword == "CMD" }), let arguments = Self.jsonArray(cmd.arguments) {
            commands.append(("Dockerfile CMD", arguments))
        }

        // Commands in comments and documentation: `paperboy <subcommand> ...` up to the end of the command.
        let subcommands = try await Self.subcommands(of: [])
        #expect(subcommands.isSuperset(of: ["serve", "worker", "migrate", "apps"]))
        let documents = ["docker/compose.yaml", "docker/Dockerfile", "docker/entrypoint.sh", "docker/secrets/README.md", "docker/.env.example"]
        var documented = 0
        for document in documents {
            let text = try String(contentsOf: Self.root.appendingPathComponent(document), encoding: .utf8)
            for line in text.split(separator: "\n") {
                for arguments in Self.documentedCommands(in: String(line), subcommands: subcommands) {
                    commands.append(("\(document): \(line.trimmingCharacters(in: .whitespaces))", arguments))
                    documented += 1
                }
            }
        }
        #expect(documented >= 3, "apps add and publications add are documented")
        #expect(commands.contains { $0.arguments.starts(with: ["apps", "add"]) && $0.arguments.contains("/run/secrets/apns_key.p8") })

        var helps: [[String]: String] = [:]
        for (origin, arguments) in commands {
            guard let first = arguments.first else {
                Issue.record("\(origin): no command")
                continue
            }
            #expect(subcommands.contains(first), "\(origin): paperboy has no subcommand \(first)")
            guard subcommands.contains(first) else { continue }
            var path = [first]
            if arguments.count > 1, try await Self.subcommands(of: path).contains(arguments[1]) {
                path.append(arguments[1])
            }
            let help: String
            if let cached = helps[path] {
                help = cached
            } else {
                let result = try await CommandRun.run(Self.binary, path + ["--help"], environment: [:])
                #expect(result.status == 0, "paperboy \(path.joined(separator: " ")) --help: \(result.output)")
                help = result.output
                helps[path] = help
            }
            let known = Self.longFlags(in: help)
            for argument in arguments where argument.hasPrefix("--") {
                let flag = String(argument.split(separator: "=", maxSplits: 1).first ?? "")
                #expect(known.contains(flag), "\(origin): paperboy \(path.joined(separator: " ")) has no \(flag)")
            }
        }
    }

    // MARK: the entrypoint

    @Test(
        "entrypoint: secrets from files, the environment wins, the admin token's file passed on (never the token), a leading `paperboy` is dropped"
    )
    func entrypoint() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-entrypoint-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let fake = directory.appendingPathComponent("paperboy")
        try """
        #!/bin/sh
        printf 'args=%s\\n' "$*"
        printf 'token=%s\\n' "${PAPERBOY_ADMIN_TOKEN:-}"
        printf 'token_file=%s\\n' "${PAPERBOY_ADMIN_TOKEN_FILE:-}"
        printf 'pgpassword=%s\\n' "${PGPASSWORD:-}"
        """.write(to: fake, atomically: true, encoding: .utf8)
        chmod(fake.path, 0o755)
        let token = directory.appendingPathComponent("admin_token")
        try "t0ken\n".write(to: token, atomically: true, encoding: .utf8)
        let password = directory.appendingPathComponent("postgres_password")
        try "pa ss:w@rd\n".write(to: password, atomically: true, encoding: .utf8)

        let base = ["PATH": "\(directory.path):/usr/bin:/bin"]
        let files = base.merging(["PAPERBOY_ADMIN_TOKEN_FILE": token.path, "PGPASSWORD_FILE": password.path]) { $1 }

        let fromFiles = try await CommandRun.run(
            URL(fileURLWithPath: "/bin/sh"),
            [Self.entrypointURL.path, "paperboy", "serve", "--port", "8080"],
            environment: files
        )
        #expect(fromFiles.status == 0)
        #expect(fromFiles.output == "args=serve --port 8080\ntoken=\ntoken_file=\(token.path)\npgpassword=pa ss:w@rd\n")

        let explicit = try await CommandRun.run(
            URL(fileURLWithPath: "/bin/sh"),
            [Self.entrypointURL.path, "worker"],
            environment: files.merging(["PAPERBOY_ADMIN_TOKEN": "from-env"]) { $1 }
        )
        #expect(explicit.output == "args=worker\ntoken=from-env\ntoken_file=\(token.path)\npgpassword=pa ss:w@rd\n")

        let none = try await CommandRun.run(URL(fileURLWithPath: "/bin/sh"), [Self.entrypointURL.path, "migrate"], environment: base)
        #expect(none.output == "args=migrate\ntoken=\ntoken_file=\npgpassword=\n")

        let missing = try await CommandRun.run(
            URL(fileURLWithPath: "/bin/sh"),
            [Self.entrypointURL.path, "migrate"],
            environment: base.merging(["PGPASSWORD_FILE": directory.appendingPathComponent("nope").path]) { $1 }
        )
        #expect(missing.status != 0)
        #expect(missing.output.contains("PGPASSWORD_FILE"))
    }

    // MARK: helpers: compose

    static func loadCompose() throws -> YAMLNode {
        try YAMLNode.parse(String(contentsOf: composeURL, encoding: .utf8))
    }

    /// A service's `command` as a list (the exec form; a string is split on spaces).
    static func command(of service: YAMLNode) -> [String] {
        if let list = service["command"]?.list { return list.compactMap(\.scalar) }
        return service["command"]?.scalar?.split(separator: " ").map(String.init) ?? []
    }

    /// `depends_on` as service → condition (the short list form means `service_started`).
    static func dependencies(of service: YAMLNode) -> [String: String] {
        guard let dependsOn = service["depends_on"] else { return [:] }
        if let list = dependsOn.list {
            return Dictionary(list.compactMap(\.scalar).map { ($0, "service_started") }) { a, _ in a }
        }
        return (dependsOn.map ?? [:]).mapValues { $0["condition"]?.scalar ?? "service_started" }
    }

    /// A service's secrets as (source, file name under /run/secrets).
    static func secretMounts(of service: YAMLNode) throws -> [(source: String, target: String)] {
        try (service["secrets"]?.list ?? []).map { entry in
            if let name = entry.scalar { return (name, name) }
            let source = try #require(entry["source"]?.scalar, "a secret entry has a source")
            let target = entry["target"]?.scalar ?? source
            return (source, target.hasPrefix("/run/secrets/") ? String(target.dropFirst("/run/secrets/".count)) : target)
        }
    }

    /// Empty, or only an interpolation of the same name from the caller's environment.
    static func isPassThrough(_ value: String) -> Bool {
        value.isEmpty || value.range(of: #"^\$\{[A-Z0-9_]+(:?-)?\}$"#, options: .regularExpression) != nil
    }

    static var pyYAMLAvailable: Bool {
        get async {
            (try? await CommandRun.run(
                URL(fileURLWithPath: "/usr/bin/env"),
                ["python3", "-c", "import yaml"],
                environment: ProcessInfo.processInfo.environment
            ).status)
                == 0
        }
    }

    /// YAML to JSON with every scalar as a string (null as ""), as the test's reader gives them.
    static let pyYAMLScript = """
        import json, sys, yaml
        def n(x):
            if isinstance(x, dict): return {str(k): n(v) for k, v in x.items()}
            if isinstance(x, list): return [n(v) for v in x]
            if x is None: return ""
            if isinstance(x, bool): return "true" if x else "false"
            return str(x)
        print(json.dumps(n(yaml.safe_load(open(sys.argv[1])))))
        """

    // MARK: helpers: Dockerfile

    struct Instruction {
        var keyword: String
        var arguments: String
    }

    /// Instructions with continuation lines joined and comments dropped.
    static func loadDockerfile() throws -> [Instruction] {
        let text = try String(contentsOf: dockerfileURL, encoding: .utf8)
        var instructions: [Instruction] = []
        var pending = ""
        for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("#") { continue }
            if line.hasSuffix("\\") {
                pending += line.dropLast().trimmingCharacters(in: .whitespaces) + " "
                continue
            }
            let full = (pending + line).trimmingCharacters(in: .whitespaces)
            pending = ""
            guard !full.isEmpty else { continue }
            let keyword = String(full.prefix { !$0.isWhitespace })
            let arguments = full.dropFirst(keyword.count).trimmingCharacters(in: .whitespaces)
            instructions.append(Instruction(keyword: keyword.uppercased(), arguments: arguments))
        }
        return instructions
    }

    static func jsonArray(_ text: String) -> [String]? {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String]
    }

    static func dockerignorePatterns() throws -> [String] {
        try String(contentsOf: root.appendingPathComponent(".dockerignore"), encoding: .utf8)
            .split(separator: "\n")
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") && !$0.hasPrefix("!") }
            .map { $0.hasPrefix("/") ? String($0.dropFirst()) : $0 }
    }

    /// The pattern that excludes `path` or one of its parent directories (`**/` matches any depth).
    static func ignoredBy(_ patterns: [String], _ path: String) -> String? {
        let components = path.split(separator: "/").map(String.init)
        let prefixes = (1...components.count).map { components.prefix($0).joined(separator: "/") }
        for pattern in patterns {
            let anywhere = pattern.hasPrefix("**/") ? String(pattern.dropFirst(3)) : nil
            for prefix in prefixes {
                if fnmatch(pattern, prefix, FNM_PATHNAME) == 0 { return pattern }
                if let anywhere, fnmatch(anywhere, String(prefix.split(separator: "/").last ?? ""), 0) == 0 { return pattern }
            }
        }
        return nil
    }

    // MARK: helpers: the CLI

    /// Subcommand names listed by `paperboy <path> --help`.
    static func subcommands(of path: [String]) async throws -> Set<String> {
        let help = try await CommandRun.run(binary, path + ["--help"], environment: [:]).output
        guard let start = help.range(of: "SUBCOMMANDS:\n") else { return [] }
        var names: Set<String> = []
        for line in help[start.upperBound...].split(separator: "\n") {
            guard line.hasPrefix("  "), !line.hasPrefix("   ") else { continue }
            if let name = line.split(separator: " ").first, name.allSatisfy({ $0.isLowercase || $0.isNumber || $0 == "-" }) {
                names.insert(String(name))
            }
        }
        return names
    }

    static func longFlags(in help: String) -> Set<String> {
        var flags: Set<String> = []
        var rest = help[...]
        while let range = rest.range(of: #"--[a-z0-9][a-z0-9-]*"#, options: .regularExpression) {
            flags.insert(String(rest[range]))
            rest = rest[range.upperBound...]
        }
        return flags
    }

    /// `paperboy <subcommand> …` in a line of text, up to a backtick, `#`, `|`, `&&`, `;` or `)`; words
    /// in double quotes stay one argument.
    static func documentedCommands(in line: String, subcommands: Set<String>) -> [[String]] {
        var found: [[String]] = []
        var rest = line[...]
        while let range = rest.range(of: "paperboy ") {
            let boundary = range.lowerBound == line.startIndex || !line[line.index(before: range.lowerBound)].isLetter
            rest = rest[range.upperBound...]
            guard boundary else { continue }
            var text = String(rest)
            for terminator in ["`", " #", " |", " &&", ";", ")"] {
                if let end = text.range(of: terminator) { text = String(text[..<end.lowerBound]) }
            }
            var words: [String] = []
            var current = ""
            var quoted = false
            for character in text {
                if character == "\"" {
                    quoted.toggle()
                } else if character == " " && !quoted {
                    if !current.isEmpty { words.append(current) }
                    current = ""
                } else {
                    current.append(character)
                }
            }
            if !current.isEmpty { words.append(current) }
            if let first = words.first, subcommands.contains(first) {
                found.append(words)
            }
        }
        return found
    }
}

extension Array {
    /// Groups that each start at an element matching `isStart` (elements before the first are dropped).
    fileprivate func split(before isStart: (Element) -> Bool) -> [[Element]] {
        var groups: [[Element]] = []
        for element in self {
            if isStart(element) {
                groups.append([element])
            } else if !groups.isEmpty {
                groups[groups.count - 1].append(element)
            }
        }
        return groups
    }
}
