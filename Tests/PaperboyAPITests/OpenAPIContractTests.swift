import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import PaperboyAPI
import PostgresNIO
import Testing

/// `openapi.yaml` against the server: the same routes, the same authentication, served as it is in the
/// repository. (What the responses look like is checked by schemathesis: `scripts/schemathesis.sh`.)
@Suite("OpenAPI contract")
struct OpenAPIContractTests {
    static let specURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("openapi.yaml")

    static func specText() throws -> String {
        try String(contentsOf: specURL, encoding: .utf8)
    }

    /// A router over a client that never runs: building routes uses no database.
    static func idleClient() -> PostgresClient {
        PostgresClient(configuration: .init(host: "127.0.0.1", port: 1, username: "unused", password: nil, database: nil, tls: .disable))
    }

    @Test("every route the server has is in openapi.yaml, and every operation of openapi.yaml is a route")
    func sameRoutes() throws {
        let specified = Set(try SpecOperation.parse(Self.specText()).map(\.route))
        let served = Set(routeTable(client: Self.idleClient()))
        #expect(!served.isEmpty)
        for route in served.subtracting(specified).sorted() {
            Issue.record("the server has \(route), which openapi.yaml lacks")
        }
        for route in specified.subtracting(served).sorted() {
            Issue.record("openapi.yaml has \(route), which the server lacks")
        }
    }

    @Test("the spec embedded in the binary is exactly openapi.yaml")
    func embeddedCopyMatchesFile() throws {
        #expect(OpenAPISpec.yaml == (try Self.specText()), "run scripts/embed-openapi.sh after changing openapi.yaml")
    }

    @Test("the minimal paths parser reads paths, methods and security")
    func parser() throws {
        let yaml = """
            openapi: 3.1.0
            paths:
              /a/{id}:
                parameters:
                  - name: id
                get:
                  security:
                    - deviceKey: []
                  responses: {}
                delete:
                  security: []
              "/b":
                post:
                  security:
                    - adminToken: []
            components:
              schemas:
                get:
                  type: object
            """
        let operations = try SpecOperation.parse(yaml)
        #expect(operations.map(\.route.description) == ["GET /a/{id}", "DELETE /a/{id}", "POST /b"])
        #expect(operations.map(\.security) == [["deviceKey"], [], ["adminToken"]])
    }

    @Test("GET /openapi.yaml serves openapi.yaml without authentication; each operation needs the key the spec names")
    func servedAndAuthenticated() async throws {
        let spec = try Self.specText()
        let operations = try SpecOperation.parse(spec)
        try await APIFixture.with { _, client in
            let served = try await client.send(.get, "/openapi.yaml")
            #expect(served.status == .ok)
            #expect(served.headers[.contentType] == "application/yaml")
            #expect(served.text == spec)

            for operation in operations {
                let uri = operation.exampleURI
                let response = try await client.send(
                    try #require(HTTPRequest.Method(operation.route.method)),
                    uri,
                    body: ["PUT", "POST"].contains(operation.route.method) ? "{}" : nil
                )
                switch operation.security {
                case ["deviceKey"]:
                    #expect(response.status == .unauthorized, "\(operation.route) without X-API-Key")
                    #expect(try response.apiError().field == "X-API-Key", "\(operation.route)")
                case ["adminToken"]:
                    #expect(response.status == .unauthorized, "\(operation.route) without Authorization")
                    #expect(try response.apiError().field == "Authorization", "\(operation.route)")
                case []:
                    #expect(response.status == .ok, "\(operation.route) needs no credentials")
                default:
                    Issue.record("\(operation.route): unexpected security \(operation.security)")
                }
            }

            // Every other method of a path answers 405 with the spec's methods (and HEAD beside GET) in Allow,
            // QUERY included, as the spec's introduction says.
            let candidates = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "QUERY"]
            for (path, methods) in Dictionary(grouping: operations, by: \.route.path).mapValues({ $0.map(\.route.method) }) {
                var allowed = methods
                if allowed.contains("GET") { allowed.append("HEAD") }
                for other in candidates where !allowed.contains(other) {
                    let uri = SpecOperation.exampleURI(path)
                    let response = try await client.send(try #require(HTTPRequest.Method(other)), uri)
                    #expect(response.status == .methodNotAllowed, "\(other) \(path)")
                    let allow = Set((response.headers[.allow] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
                    #expect(allow == Set(allowed), "Allow of \(path)")
                }
            }
        }
    }
}

/// An operation of an OpenAPI document, read by a minimal parser of its `paths:` section: a path is a key
/// indented by two spaces, a method a key indented by four, and an operation's `security` lists scheme
/// names indented by eight (`security: []` is none). Enough for `openapi.yaml`, which is written that way.
struct SpecOperation {
    var route: APIRoute
    var security: [String]

    struct ParseError: Error, CustomStringConvertible {
        var description: String
    }

    static let methods: Set<String> = ["get", "put", "post", "delete", "options", "head", "patch", "trace", "query"]

    static func parse(_ yaml: String) throws -> [SpecOperation] {
        let lines = yaml.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let start = lines.firstIndex(of: "paths:") else { throw ParseError(description: "no top-level paths: section") }
        var operations: [SpecOperation] = []
        var path: String?
        var inSecurity = false
        for line in lines[(start + 1)...] {
            let content = line.drop(while: { $0 == " " })
            if content.isEmpty || content.hasPrefix("#") { continue }
            let indent = line.count - content.count
            if indent == 0 { break }  // the next top-level key
            if indent == 2 {
                guard content.hasSuffix(":") else { throw ParseError(description: "not a path key: \(line)") }
                path = String(content.dropLast()).trimmingCharacters(in: CharacterSet(charactersIn: "\"'"))
                inSecurity = false
            } else if indent == 4 {
                inSecurity = false
                let key = content.split(separator: ":", maxSplits: 1).first.map(String.init) ?? ""
                guard Self.methods.contains(key) else { continue }
                guard let path else { throw ParseError(description: "a method outside a path: \(line)") }
                operations.append(SpecOperation(route: APIRoute(method: key.uppercased(), path: path), security: []))
            } else if indent == 6 {
                inSecurity = content.hasPrefix("security:") && !content.hasPrefix("security: []")
                if inSecurity, content != "security:" { throw ParseError(description: "write security as a block list: \(line)") }
            } else if indent == 8, inSecurity, content.hasPrefix("- "), !operations.isEmpty {
                let name = content.dropFirst(2).split(separator: ":").first.map(String.init) ?? ""
                operations[operations.count - 1].security.append(name)
            }
        }
        return operations
    }

    /// The path with example values for its parameters, and the query the operation requires.
    var exampleURI: String {
        let uri = Self.exampleURI(route.path)
        return route.path == "/v1/editions/latest" ? uri + "?publication=morning" : uri
    }

    static func exampleURI(_ path: String) -> String {
        path.replacingOccurrences(of: "{token}", with: String(repeating: "ab", count: 32))
            .replacingOccurrences(of: "{id}", with: "0b4ed6a3-3c2e-4b8e-9a55-0d2f3f1b7c11")
    }
}
