import ArgumentParser

@main
struct StrataCommand: AsyncParsableCommand {
    /// The version `strata --version` prints: the package's, until it has releases.
    static let version = "0.1.0"

    static let configuration = CommandConfiguration(
        commandName: "strata",
        abstract: "Store and cache values: the Strata command-line tool.",
        version: StrataCommand.version,
        subcommands: [
            Demo.self, ListCommand.self, GetCommand.self, SetCommand.self, RemoveCommand.self, StatsCommand.self,
            VerifyCommand.self, TrimCommand.self, ObjectsCommand.self, DebugWriterCommand.self,
            DebugSharedCacheCommand.self,
        ]
    )
}
