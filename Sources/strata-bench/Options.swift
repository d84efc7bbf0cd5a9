/// The command line of `strata-bench`, parsed by hand so the bench depends on nothing the library
/// does not.
struct Options {
    static let usage = """
        USAGE: strata-bench [--json] [--filter PREFIX]... [--rounds N] [--list]

        Measures Strata and its raw baseline in the same run: each figure's rounds are interleaved
        with its baseline's and the median is kept. Ratio = Strata / baseline; lower is better.

        OPTIONS:
          --json            Print one JSON object per figure and line instead of a table; notes go
                            to standard error.
          --filter PREFIX   Run only the figures whose name starts with PREFIX (repeatable).
          --rounds N        Timed rounds per figure, after one warm-up round (default 7, at least 1).
          --list            Print the names of the figures that would run, and exit.
          -h, --help        Print this help, and exit.
        """

    var json = false
    var filters: [String] = []
    var rounds = 7
    var list = false
    var help = false

    /// Parses `arguments`, which exclude the executable's name.
    init(arguments: [String]) throws(UsageError) {
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            let (name, inlineValue) = Self.split(argument)
            func value() throws(UsageError) -> String {
                if let inlineValue {
                    return inlineValue
                }
                guard let next = remaining.popFirst() else {
                    throw UsageError("\(name) needs a value")
                }
                return next
            }
            switch name {
            case "--json":
                json = true
            case "--filter":
                filters.append(try value())
            case "--rounds":
                let text = try value()
                guard let rounds = Int(text), rounds >= 1 else {
                    throw UsageError("--rounds needs a positive whole number, got '\(text)'")
                }
                self.rounds = rounds
            case "--list":
                list = true
            case "-h", "--help":
                help = true
            default:
                throw UsageError("unknown argument '\(argument)'")
            }
        }
    }

    /// Whether the figure named `name` is selected.
    func selects(_ name: String) -> Bool {
        filters.isEmpty || filters.contains { name.hasPrefix($0) }
    }

    /// Splits `--name=value` into its name and value.
    private static func split(_ argument: String) -> (String, String?) {
        guard argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") else {
            return (argument, nil)
        }
        return (String(argument[..<equals]), String(argument[argument.index(after: equals)...]))
    }
}

/// A command line `strata-bench` cannot run.
struct UsageError: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) {
        self.description = description
    }
}
