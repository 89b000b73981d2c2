import Foundation
import Logging

extension LoggingSystem {
    /// Logs to standard error at `LOG_LEVEL` (trace, debug, info, notice, warning, error; default info).
    static func bootstrapPaperboy() {
        let level = ProcessInfo.processInfo.environment["LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .info
        bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }
}
