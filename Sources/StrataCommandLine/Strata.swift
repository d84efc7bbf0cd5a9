import ArgumentParser

@main
struct StrataCommand: AsyncParsableCommand {
    /// The version `strata --version` prints: the package's, until it has releases.
    static let version = "0.1.0"

    static let configuration = CommandConfiguration(
        commandName: "strata",
        abstract: "Store and cache values: the Strata command-line tool.",
        version: StrataCommand.version,
        subcommands: subcommands
    )

    /// The commands; `debug-shared-cache` needs PostgreSQL, so only a build with the Postgres
    /// trait has it.
    private static var subcommands: [any ParsableCommand.Type] {
        var commands: [any ParsableCommand.Type] = [
            Demo.self, ListCommand.self, GetCommand.self, SetCommand.self, RemoveCommand.self, StatsCommand.self,
            VerifyCommand.self, TrimCommand.self, ObjectsCommand.self, DebugWriterCommand.self,
            DebugMigrateCommand.self,
        ]
        #if Postgres
        commands.append(DebugSharedCacheCommand.self)
        #endif
        return commands
    }
}
