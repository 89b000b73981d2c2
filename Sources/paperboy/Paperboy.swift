import ArgumentParser

@main
struct Paperboy: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "paperboy",
        abstract: "Wakes newspaper apps with background pushes (APNs and FCM) so the edition is there before the reader.",
        subcommands: [
            DemoCommand.self,
            ServeCommand.self,
            MigrateCommand.self,
            AppsCommand.self,
            PublicationsCommand.self,
            OriginsCommand.self,
            EditionsCommand.self,
            CohortsCommand.self,
            BroadcastCommand.self,
            WorkerCommand.self,
            SchedulesCommand.self,
            DevicesCommand.self,
            PruneCommand.self,
            AuditCommand.self,
            InsightsCommand.self,
            APNsSimCommand.self,
            FCMSimCommand.self,
            PushCommand.self,
        ]
    )
}
