import ArgumentParser

/// `paperboy-bench`: Paperboy's benchmarks, apart from the `paperboy` an operator runs.
@main
struct PaperboyBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "paperboy-bench",
        abstract: "Paperboy's benchmarks: they print numbers (and --json for scripts) and assert nothing.",
        discussion: "Results go to BENCHMARKS.md with the command that produced them.",
        subcommands: [
            APNsBench.self,
            FCMBench.self,
            SeedBench.self,
            HistoryBench.self,
            StatementsBench.self,
            CompareBench.self,
            FleetBench.self,
            GuessBench.self,
        ]
    )
}
