import EmbeddedPostgres
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("Finding PostgreSQL's server programs")
struct PostgresBinariesTests {
    @Test("PAPERBOY_PG_BIN at a directory without PostgreSQL: starting fails saying what to install or set, naming the directory")
    func configuredEmpty() async throws {
        try await withTemporaryDirectory { empty in
            let search = PostgresBinaries.Search(configured: empty, candidates: [])
            let error = try await #require(throws: EmbeddedPostgresError.self) { try await EmbeddedPostgres.start(search: search) }
            #expect(error.description.contains("apt-get install postgresql-15"))
            #expect(error.description.contains("PAPERBOY_PG_BIN=/path/to/bin"))
            #expect(error.description.contains(empty))
            #expect(error.description.contains("initdb, pg_ctl, postgres"), "names the missing programs")
            #expect(!error.description.contains("exit status"))
        }
    }

    @Test("nothing configured and no installation found: starting fails saying what to install or set")
    func nothingFound() async throws {
        try await withTemporaryDirectory { empty in
            let search = PostgresBinaries.Search(configured: nil, candidates: [empty, empty + "/missing"])
            let error = try await #require(throws: EmbeddedPostgresError.self) { try await EmbeddedPostgres.start(search: search) }
            #expect(error.description.contains("apt-get install postgresql-15"))
            #expect(error.description.contains("PAPERBOY_PG_BIN=/path/to/bin"))
        }
    }

    @Test("the standard search honours PAPERBOY_PG_BIN, then installed versions newest first, then PATH")
    func standardSearch() {
        let configured = PostgresBinaries.Search.standard(environment: ["PAPERBOY_PG_BIN": "/opt/pg/bin", "PATH": "/usr/bin"])
        #expect(configured.configured == "/opt/pg/bin")
        let unset = PostgresBinaries.Search.standard(environment: ["PAPERBOY_PG_BIN": "", "PATH": "/a/bin:/b/bin"])
        #expect(unset.configured == nil)
        #expect(Array(unset.candidates.suffix(2)) == ["/a/bin", "/b/bin"])
        let installed = unset.candidates.dropLast(2)
        #expect(installed.allSatisfy { $0.hasPrefix("/usr/lib/postgresql/") || $0.hasPrefix("/usr/pgsql-") })
    }

    @Test("a PATH directory of links to the programs resolves to the directory they link to")
    func linkedPrograms() throws {
        try withTemporaryDirectorySync { root in
            let real = root + "/15/bin"
            let links = root + "/links"
            try FileManager.default.createDirectory(atPath: real, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: links, withIntermediateDirectories: true)
            for program in PostgresBinaries.programs {
                try writeScript(real + "/" + program, "exit 0")
                try FileManager.default.createSymbolicLink(atPath: links + "/" + program, withDestinationPath: real + "/" + program)
            }
            let found = try PostgresBinaries.locate(.init(configured: nil, candidates: [root, links]))
            #expect(resolved(found.directory) == resolved(real))
            let configured = try PostgresBinaries.locate(.init(configured: real, candidates: []))
            #expect(configured.directory == real)
        }
    }

    @Test("a failed initdb leaves no cluster directory behind and says what failed")
    func failedInitdb() async throws {
        try await withTemporaryDirectory { bin in
            // Run as `postgres` when the tests run as root: it must reach the programs and the note.
            chmod(bin, 0o777)
            try writeScript(bin + "/initdb", "echo \"$2\" > \"$(dirname \"$0\")/data-directory\"\necho 'initdb: simulated failure' >&2\nexit 1")
            try writeScript(bin + "/pg_ctl", "exit 1")
            try writeScript(bin + "/postgres", "exit 1")
            let error = try await #require(throws: EmbeddedPostgresError.self) {
                try await EmbeddedPostgres.start(search: .init(configured: bin, candidates: []))
            }
            #expect(error.step == "initdb")
            #expect(error.message.contains("simulated failure"))
            let data = try String(contentsOfFile: bin + "/data-directory", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(data.hasSuffix("/data"))
            #expect(!FileManager.default.fileExists(atPath: (data as NSString).deletingLastPathComponent), "the cluster directory is removed")
        }
    }
}

func writeScript(_ path: String, _ body: String) throws {
    try ("#!/bin/sh\n" + body + "\n").write(toFile: path, atomically: true, encoding: .utf8)
    chmod(path, 0o755)
}

func resolved(_ path: String) -> String {
    URL(fileURLWithPath: path).resolvingSymlinksInPath().path
}

func withTemporaryDirectory<Result>(_ body: (String) async throws -> Result) async throws -> Result {
    let directory = NSTemporaryDirectory() + "paperboy-test-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    return try await body(directory)
}

func withTemporaryDirectorySync<Result>(_ body: (String) throws -> Result) throws -> Result {
    let directory = NSTemporaryDirectory() + "paperboy-test-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    return try body(directory)
}
