import Foundation
import StrataTestSupport
import Testing

/// Every performance figure in README.md and in the DocC catalogs (`Sources/*/*.docc/*.md`) sits
/// in a block that `scripts/figures.py` writes from one run of `strata-bench --json`:
///
///     <!-- figures:NAME FIGURE FIGURE ... -->
///     ...
///     <!-- /figures:NAME -->
///
/// or with the opening comment over several lines, one `FIGURE: what it measures` a line and an
/// optional `columns:` line. These tests check that every block is closed and names only figures
/// `strata-bench` defines, which they read from `Benchmark(name:)` in `Sources/strata-bench/`
/// without running it.
@Suite(.onTestThreads) struct GeneratedFiguresTests {
    /// A block of generated figures: its name, the figures it names, and the line it opens on.
    struct Block: Equatable {
        var name: String
        var figures: [String]
        var line: Int
    }

    /// The figure names `strata-bench` defines, as globs in which `*` stands for one part of a
    /// dotted name (an interpolation such as `provider.coordinated.\(waiters)`).
    struct KnownFigures {
        var globs: [String]

        func contains(_ figure: String) -> Bool {
            globs.contains { Self.matches(figure[...], glob: $0[...]) }
        }

        /// Whether `name` matches `glob`, where `*` matches one or more characters other than `.`.
        private static func matches(_ name: Substring, glob: Substring) -> Bool {
            guard let first = glob.first else { return name.isEmpty }
            guard first == "*" else {
                return name.first == first && matches(name.dropFirst(), glob: glob.dropFirst())
            }
            var taken = name.startIndex
            while taken < name.endIndex, name[taken] != "." {
                taken = name.index(after: taken)
                if matches(name[taken...], glob: glob.dropFirst()) { return true }
            }
            return false
        }
    }

    /// Names `strata-bench` builds in ways other than a string literal, resolved by hand: the
    /// source expression after `Benchmark(name:`, and the globs it yields. A new such expression
    /// fails `theBenchmarkSourcesNameEveryFigure` until it is added here.
    static let derivedNames: [String: [String]] = [
        #""disk.get.1k.async" + suffix"#: ["disk.get.1k.async", "disk.get.1k.async.hop"],
        #""http.cache.hit.64k" + suffix"#: ["http.cache.hit.64k", "http.cache.hit.64k.hop"],
        #""objects.fetch" + suffix"#: ["objects.fetch", "objects.fetch.hop"],
        "concurrentName(tasks: tasks, mixed: writeShare > 0)": [
            "memory.concurrent.get.hit.*", "memory.concurrent.mixed.*",
        ],
        "unsharedName(tasks: tasks)": ["memory.concurrent.get.hit.unshared.*"],
        // A parameter: the figures are the literals passed as `named:`, collected separately.
        "name": [],
    ]

    /// The package's root, found as `ReadmeTests` finds it.
    static var root: URL { ReadmeTests.root }

    static func read(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    /// The figures `strata-bench` defines, and the `Benchmark(name:)` expressions nobody resolved.
    static func knownFigures() throws -> (figures: KnownFigures, unresolved: [String]) {
        let folder = "Sources/strata-bench"
        let files = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent(folder).path)
        var globs: [String] = []
        var unresolved: [String] = []
        for file in files.sorted() where file.hasSuffix(".swift") {
            let source = try read("\(folder)/\(file)")
            for match in source.matches(of: /Benchmark\(name: (.+?), baseline:/) {
                let expression = String(match.1)
                if let literal = glob(ofLiteral: expression) {
                    globs.append(literal)
                } else if let derived = derivedNames[expression] {
                    globs += derived
                } else {
                    unresolved.append("\(file): \(expression)")
                }
            }
            // Names handed to a function that passes them on as `Benchmark(name: name, …)`.
            for match in source.matches(of: /named: ("[^"\n]+")/) {
                if let literal = glob(ofLiteral: String(match.1)) { globs.append(literal) }
            }
        }
        return (KnownFigures(globs: globs), unresolved)
    }

    /// `"memory.get.hit.\(name)"` as `memory.get.hit.*`, or `nil` when `expression` is not one
    /// string literal.
    static func glob(ofLiteral expression: String) -> String? {
        guard expression.count >= 2, expression.hasPrefix("\""), expression.hasSuffix("\"") else { return nil }
        let body = expression.dropFirst().dropLast()
        let glob = body.replacing(/\\\((?:[^()]|\([^()]*\))*\)/, with: "*")
        return glob.contains("\"") ? nil : String(glob)
    }

    /// The blocks of a document, and what is wrong with them: a block not closed before the next
    /// one opens, a closing comment without its block, a name used twice, a block naming nothing.
    static func blocks(in text: String) -> (blocks: [Block], problems: [String]) {
        let lines = text.components(separatedBy: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        var blocks: [Block] = []
        var problems: [String] = []
        var open: Block?
        var index = 0
        while index < lines.count {
            let line = lines[index]
            if let match = line.firstMatch(of: /^<!-- \/figures:([\w.-]+) -->$/) {
                if let current = open, current.name == String(match.1) {
                    blocks.append(current)
                    open = nil
                } else {
                    problems.append("line \(index + 1): <!-- /figures:\(match.1) --> closes no open block")
                }
            } else if let match = line.firstMatch(of: /^<!-- figures:([\w.-]+)(.*)$/) {
                if let unclosed = open {
                    problems.append("line \(unclosed.line): figures:\(unclosed.name) is not closed")
                }
                var block = Block(name: String(match.1), figures: [], line: index + 1)
                let rest = String(match.2)
                if let end = rest.range(of: "-->") {
                    block.figures = rest[..<end.lowerBound].split(separator: " ").map(String.init)
                } else {
                    // One figure a line, up to the line with `-->`.
                    while index + 1 < lines.count {
                        index += 1
                        let end = lines[index].range(of: "-->")
                        let entry = end.map { lines[index][..<$0.lowerBound] } ?? lines[index][...]
                        let figure = entry.prefix { $0 != ":" }.trimmingCharacters(in: .whitespaces)
                        if !figure.isEmpty, !entry.hasPrefix("columns:") {
                            block.figures.append(figure)
                        }
                        if end != nil { break }
                    }
                }
                if block.figures.isEmpty {
                    problems.append("line \(block.line): figures:\(block.name) names no figure")
                }
                if blocks.contains(where: { $0.name == block.name }) {
                    problems.append("line \(block.line): a second block is named figures:\(block.name)")
                }
                open = block
            }
            index += 1
        }
        if let unclosed = open {
            problems.append("line \(unclosed.line): figures:\(unclosed.name) is not closed")
        }
        return (blocks, problems)
    }

    /// Everything wrong with a document's blocks, given the figures that exist.
    static func problems(in text: String, known: KnownFigures) -> [String] {
        let (found, structural) = Self.blocks(in: text)
        let unknown = found.flatMap { block in
            block.figures.filter { !known.contains($0) }.map {
                "line \(block.line): figures:\(block.name) names \($0), which strata-bench does not define"
            }
        }
        return structural + unknown
    }

    @Test func theBenchmarkSourcesNameEveryFigure() throws {
        let (known, unresolved) = try Self.knownFigures()

        #expect(unresolved.isEmpty, "add these Benchmark(name:) expressions to derivedNames: \(unresolved)")
        for figure in [
            "memory.get.hit", "memory.get.hit.metrics", "memory.get.hit.s3-fifo", "memory.set.evicting.lru",
            "memory.set.expiring", "memory.concurrent.mixed.2", "memory.concurrent.get.hit.unshared.1",
            "disk.get.1k.async.hop", "disk.checksum.1m", "provider.coordinated.10000", "provider.cached.hot.hit",
            "http.cache.hit.64k.hop", "objects.fetch.hop", "objects.query.100k", "sqlite.set.batch1000",
            "postgres.get",
        ] {
            #expect(known.contains(figure), "\(figure)")
        }
        for figure in ["memory.get", "memory.get.hit.metrics.extra", "disk.get.1k.async.hop.hop", "provider.nope"] {
            #expect(!known.contains(figure), "\(figure)")
        }
    }

    @Test func everyBlockIsClosedAndNamesOnlyFiguresTheBenchmarkDefines() throws {
        let known = try Self.knownFigures().figures
        var blockCount = 0

        for document in try ReadmeTests.documents() {
            blockCount += Self.blocks(in: document.text).blocks.count
            for problem in Self.problems(in: document.text, known: known) {
                Issue.record("\(document.path): \(problem)")
            }
        }

        #expect(blockCount > 0, "no document has a <!-- figures:NAME --> block")
    }

    @Test func aBlockNamingAFigureTheBenchmarkLacksFails() throws {
        let known = try Self.knownFigures().figures
        let text = """
            Reads:

            <!-- figures:reads memory.get.hit memory.get.hits -->
            | figure | ns/op |
            <!-- /figures:reads -->

              <!-- figures:disk
              disk.get.1k: a read
              disk.get.2k: a larger read
              columns: figure, measures, ns
              -->
              <!-- /figures:disk -->
            """

        let problems = Self.problems(in: text, known: known)

        #expect(
            problems == [
                "line 3: figures:reads names memory.get.hits, which strata-bench does not define",
                "line 7: figures:disk names disk.get.2k, which strata-bench does not define",
            ]
        )
    }

    @Test func aBlockLeftOpenOrClosedTwiceFails() {
        let text = """
            <!-- figures:first memory.get.hit -->
            <!-- figures:second memory.set -->
            <!-- /figures:second -->
            <!-- /figures:second -->
            <!-- figures:empty
            -->
            <!-- /figures:empty -->
            """

        let (blocks, problems) = Self.blocks(in: text)

        #expect(blocks.map(\.name) == ["second", "empty"])
        #expect(
            problems == [
                "line 1: figures:first is not closed",
                "line 4: <!-- /figures:second --> closes no open block",
                "line 5: figures:empty names no figure",
            ]
        )
    }

    /// The load-test tables of "Getting started on a server" are written by
    /// `scripts/load-tables.py` from the runs `scripts/load.sh` keeps: each sits in a closed
    /// `<!-- load:NAME -->` block that holds one table and nothing else.
    @Test func theLoadTablesAreGeneratedBlocks() throws {
        let path = "Sources/Strata/Strata.docc/GettingStartedOnAServer.md"
        let document = try #require(try ReadmeTests.documents().first { $0.path == path })
        let lines = document.text.split(separator: "\n", omittingEmptySubsequences: false)

        for name in ["throughput", "staleness", "fault"] {
            let opening = try #require(
                lines.firstIndex(of: "<!-- load:\(name) -->"),
                "\(path) has no <!-- load:\(name) --> block"
            )
            let closing = try #require(
                lines[opening...].firstIndex(of: "<!-- /load:\(name) -->"),
                "\(path): load:\(name) is not closed"
            )
            let table = lines[(opening + 1)..<closing]
            #expect(table.count >= 4, "load:\(name) holds a heading, a rule and at least two rows")
            #expect(table.allSatisfy { $0.hasPrefix("| ") && $0.hasSuffix(" |") }, "load:\(name) holds a table only")
        }
    }
}
