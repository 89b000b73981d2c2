import Foundation
import ServiceLifecycle

/// How `apns-sim` and `fcm-sim` wait: until graceful shutdown (SIGINT or SIGTERM), meanwhile, when `line` is
/// given, writing one progress line a second on standard error made from the stats now and a second ago.
func waitForShutdown<Stats: Sendable>(
    stats: @escaping @Sendable () -> Stats,
    progress line: (@Sendable (_ now: Stats, _ last: Stats) -> String)?
) async {
    guard let line else {
        try? await gracefulShutdown()
        return
    }
    await withTaskGroup(of: Void.self) { group in
        group.addTask {
            var last = stats()
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                let now = stats()
                FileHandle.standardError.write(Data((line(now, last) + "\n").utf8))
                last = now
            }
        }
        try? await gracefulShutdown()
        group.cancelAll()
    }
}
