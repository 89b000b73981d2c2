import Foundation
import PaperboyStore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The audit entry of a change made with the `paperboy` command line, written in the change's transaction like the
/// console's and the admin API's: surface and role `cli`, the OS user as the name (the user who ran `sudo` when there
/// is one), the host as the address.
enum CLIAudit {
    static func entry(
        _ action: String,
        appID: Int? = nil,
        broadcastID: UUID? = nil,
        editionID: UUID? = nil,
        detail: String = "",
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> AuditEntry {
        AuditEntry(
            surface: .cli,
            role: "cli",
            name: user(environment: environment),
            address: host(),
            action: action,
            appID: appID,
            broadcastID: broadcastID,
            editionID: editionID,
            detail: detail
        )
    }

    /// Who ran the command: `SUDO_USER` under sudo, else the process's user by its uid (not `USER`, which anyone
    /// can set), else `USER`.
    static func user(environment: [String: String]) -> String? {
        if let sudo = environment["SUDO_USER"], !sudo.isEmpty { return sudo }
        if let entry = getpwuid(getuid()), let name = entry.pointee.pw_name { return String(cString: name) }
        return environment["USER"]
    }

    /// This machine's host name (`gethostname`, no DNS).
    static func host() -> String? {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return nil }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return name.isEmpty ? nil : name
    }
}
