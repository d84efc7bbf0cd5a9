import ArgumentParser

@main
struct StrataCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "strata",
        abstract: "Store and cache values: the Strata command-line tool.",
        subcommands: [
            Demo.self, ListCommand.self, GetCommand.self, SetCommand.self, RemoveCommand.self, StatsCommand.self,
            VerifyCommand.self, TrimCommand.self, ObjectsCommand.self, DebugWriterCommand.self,
            DebugSharedCacheCommand.self,
        ]
    )
}
