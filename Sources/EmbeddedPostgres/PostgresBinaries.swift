import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Where the PostgreSQL server programs a throwaway cluster needs (`initdb`, `pg_ctl`, `postgres`) live.
public struct PostgresBinaries: Sendable {
    /// The programs a directory must hold: `pg_ctl` starts the `postgres` beside it.
    public static let programs = ["initdb", "pg_ctl", "postgres"]

    /// The directory holding ``programs``.
    public let directory: String

    /// Where to look, in order.
    public struct Search: Sendable {
        /// `PAPERBOY_PG_BIN`: when set, the only directory looked at, so that a wrong setting is reported
        /// rather than quietly replaced by another installation.
        public var configured: String?
        /// Directories to try in order when nothing is configured: by default the newest installed
        /// `/usr/lib/postgresql/<version>/bin` (Debian, Ubuntu) and `/usr/pgsql-<version>/bin` (RHEL), then
        /// each directory of `PATH`.
        public var candidates: [String]

        public init(configured: String?, candidates: [String]) {
            self.configured = configured
            self.candidates = candidates
        }

        /// The search for this process: `PAPERBOY_PG_BIN`, the usual installation directories, `PATH`.
        public static func standard(environment: [String: String] = ProcessInfo.processInfo.environment) -> Search {
            let configured = environment["PAPERBOY_PG_BIN"].flatMap { $0.isEmpty ? nil : $0 }
            var installed: [(version: Int, directory: String)] = []
            for (root, prefix, suffix) in [("/usr/lib/postgresql", "", "/bin"), ("/usr", "pgsql-", "/bin")] {
                for name in (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [] where name.hasPrefix(prefix) {
                    if let version = Int(name.dropFirst(prefix.count)) { installed.append((version, "\(root)/\(name)\(suffix)")) }
                }
            }
            let path = (environment["PATH"] ?? "").split(separator: ":").map(String.init).filter { !$0.isEmpty }
            return Search(configured: configured, candidates: installed.sorted { $0.version > $1.version }.map(\.directory) + path)
        }
    }

    /// The first directory of `search` that holds all ``programs``.
    ///
    /// A directory on `PATH` often holds only links (`/usr/local/bin/initdb` → `…/15/bin/initdb`); the
    /// directory the links lead to is preferred, being where `pg_ctl` looks for `postgres`.
    /// - Throws: ``EmbeddedPostgresError`` saying what to install or set.
    public static func locate(_ search: Search = .standard()) throws -> PostgresBinaries {
        if let configured = search.configured {
            let missing = missingPrograms(in: configured)
            guard missing.isEmpty else {
                throw EmbeddedPostgresError(
                    step: "find PostgreSQL",
                    message: "PAPERBOY_PG_BIN=\(configured) has no \(missing.joined(separator: ", ")): point PAPERBOY_PG_BIN=/path/to/bin "
                        + "at the directory holding initdb, pg_ctl and postgres, or install the PostgreSQL server "
                        + "(apt-get install postgresql-15) and unset it"
                )
            }
            return PostgresBinaries(directory: configured)
        }
        for candidate in search.candidates {
            let linked = realpath(candidate + "/initdb", nil).map { (resolved: UnsafeMutablePointer<CChar>) -> String in
                defer { free(resolved) }
                return (String(cString: resolved) as NSString).deletingLastPathComponent
            }
            for directory in [linked, candidate].compactMap({ $0 }) where missingPrograms(in: directory).isEmpty {
                return PostgresBinaries(directory: directory)
            }
        }
        throw EmbeddedPostgresError(
            step: "find PostgreSQL",
            message: "no PostgreSQL server programs (initdb, pg_ctl, postgres) in /usr/lib/postgresql/*/bin, "
                + "/usr/pgsql-*/bin or PATH; install them (apt-get install postgresql-15) or set PAPERBOY_PG_BIN=/path/to/bin"
        )
    }

    private static func missingPrograms(in directory: String) -> [String] {
        programs.filter { !FileManager.default.isExecutableFile(atPath: directory + "/" + $0) }
    }
}
