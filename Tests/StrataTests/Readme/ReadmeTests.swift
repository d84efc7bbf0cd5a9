import Foundation
import StrataTestSupport
import Testing

/// Every Swift block in README.md and in the DocC catalogs (`Sources/*/*.docc/*.md`) is a region
/// of a file the package compiles: a snippet file under `Tests/*/Readme/`, or an example under
/// `Examples/` (the article "Strata in an app" shows the ImageFeed example's own lines). Each
/// document shows exactly those lines, so it cannot drift from the API or from the example.
///
/// A block is marked in its document by `<!-- snippet: name -->` on the line before its fence; its
/// source is the region between `// snippet: name` and `// snippet end`, indented as in the file.
/// An example's regions are shown without their doc comments (`///` lines), which the example
/// keeps for its readers and the article says in prose. `import` lines that open a block must be
/// imports of the snippet's file. Several documents may show one snippet; every snippet is shown
/// by at least one document.
@Suite(.onTestThreads) struct ReadmeTests {
    struct Snippet {
        var name: String
        var lines: [String]
        var imports: Set<String>
        var file: String
    }

    struct Block {
        var name: String?
        var lines: [String]
        var line: Int
    }

    /// A Markdown file whose Swift blocks are compiled: its path from the package's root, and its text.
    struct Document {
        var path: String
        var text: String
    }

    static let root: URL = {
        var folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: folder.appendingPathComponent("Package.swift").path) {
            folder.deleteLastPathComponent()
        }
        return folder
    }()

    /// README.md, then every page of every DocC catalog under `Sources/`, in path order.
    static func documents() throws -> [Document] {
        let files = FileManager.default
        var paths = ["README.md"]
        let sources = root.appendingPathComponent("Sources")
        for module in try files.contentsOfDirectory(atPath: sources.path).sorted() {
            let folder = sources.appendingPathComponent(module)
            guard let entries = try? files.contentsOfDirectory(atPath: folder.path) else { continue }
            for catalog in entries.sorted() where catalog.hasSuffix(".docc") {
                let pages = try files.contentsOfDirectory(atPath: folder.appendingPathComponent(catalog).path)
                for page in pages.sorted() where page.hasSuffix(".md") {
                    paths.append("Sources/\(module)/\(catalog)/\(page)")
                }
            }
        }
        return try paths.map { path in
            Document(path: path, text: try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8))
        }
    }

    /// A document's Swift blocks, with the snippet name marked before each.
    static func blocks(in text: String) -> [Block] {
        let lines = text.components(separatedBy: "\n")
        var blocks: [Block] = []
        var index = 0
        while index < lines.count {
            guard lines[index].trimmingCharacters(in: .whitespaces) == "```swift" else {
                index += 1
                continue
            }
            var previous = index - 1
            while previous >= 0, lines[previous].trimmingCharacters(in: .whitespaces).isEmpty { previous -= 1 }
            var name: String?
            if previous >= 0, let match = lines[previous].firstMatch(of: /<!-- snippet: ([\w-]+) -->/) {
                name = String(match.1)
            }
            var end = index + 1
            while end < lines.count, lines[end].trimmingCharacters(in: .whitespaces) != "```" { end += 1 }
            blocks.append(Block(name: name, lines: Array(lines[(index + 1)..<min(end, lines.count)]), line: index + 1))
            index = end + 1
        }
        return blocks
    }

    /// The files that hold regions, by path from the package's root: every snippet file under
    /// `Tests/*/Readme/`, then every Swift file under `Examples/*/`, in path order.
    static func regionFiles() throws -> [String] {
        let files = FileManager.default
        var paths: [String] = []
        for (top, subfolder) in [("Tests", "Readme"), ("Examples", "")] {
            let base = root.appendingPathComponent(top)
            for target in try files.contentsOfDirectory(atPath: base.path).sorted() {
                let folder = subfolder.isEmpty ? "\(top)/\(target)" : "\(top)/\(target)/\(subfolder)"
                guard let names = try? files.contentsOfDirectory(atPath: root.appendingPathComponent(folder).path)
                else {
                    continue
                }
                for name in names.sorted() where name.hasSuffix(".swift") && name != "ReadmeTests.swift" {
                    paths.append("\(folder)/\(name)")
                }
            }
        }
        return paths
    }

    /// Every `// snippet: name` region in the snippet files and the examples, dedented, in the
    /// order found; an example's doc comments are left out.
    static func regions() throws -> [Snippet] {
        var regions: [Snippet] = []
        for path in try regionFiles() {
            let text = try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
            regions += Self.regions(in: text, file: path, keepingDocComments: !path.hasPrefix("Examples/"))
        }
        return regions
    }

    /// The regions of one file's `text`.
    static func regions(in text: String, file: String, keepingDocComments: Bool) -> [Snippet] {
        let lines = text.components(separatedBy: "\n")
        let imports = Set(
            lines.compactMap { line -> String? in
                let words = line.split(separator: " ")
                guard let position = words.firstIndex(of: "import"), position + 1 < words.count else {
                    return nil
                }
                return String(words[position + 1])
            }
        )
        var regions: [Snippet] = []
        var index = 0
        while index < lines.count {
            guard let match = lines[index].firstMatch(of: /^( *)\/\/ snippet: ([\w-]+)$/) else {
                index += 1
                continue
            }
            let indent = match.1.count
            var region: [String] = []
            index += 1
            while index < lines.count, lines[index].trimmingCharacters(in: .whitespaces) != "// snippet end" {
                let line = lines[index]
                index += 1
                if !keepingDocComments, line.trimmingCharacters(in: .whitespaces).hasPrefix("///") { continue }
                region.append(line.count >= indent ? String(line.dropFirst(indent)) : "")
            }
            regions.append(Snippet(name: String(match.2), lines: region, imports: imports, file: file))
        }
        return regions
    }

    /// The regions by name; a name used twice keeps its first region (`everySnippetNameIsUnique` reports it).
    static func snippets() throws -> [String: Snippet] {
        try Dictionary(regions().map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// What is wrong with `document`'s Swift blocks, one message per problem, each naming the
    /// document and the line of the block's fence.
    static func problems(in document: Document, snippets: [String: Snippet]) -> [String] {
        var problems: [String] = []
        for block in blocks(in: document.text) {
            let place = "\(document.path) line \(block.line)"
            guard let name = block.name else {
                problems.append("\(place): a Swift block without a <!-- snippet: name --> marker")
                continue
            }
            guard let snippet = snippets[name] else {
                problems.append("\(place): no region '// snippet: \(name)' under Tests/*/Readme/ or Examples/")
                continue
            }
            var lines = block.lines[...]
            while let first = lines.first, first.hasPrefix("import ") {
                let module = String(first.dropFirst("import ".count))
                if !snippet.imports.contains(module) {
                    problems.append("\(place): the block imports \(module), which \(snippet.file) does not")
                }
                lines = lines.dropFirst()
            }
            while lines.first?.isEmpty == true { lines = lines.dropFirst() }
            let shown = Array(lines)
            if shown != snippet.lines {
                let first =
                    zip(shown, snippet.lines).enumerated().first { $0.element.0 != $0.element.1 }?.offset
                    ?? min(shown.count, snippet.lines.count)
                let shownLine = first < shown.count ? shown[first] : "(end of block)"
                let sourceLine = first < snippet.lines.count ? snippet.lines[first] : "(end of region)"
                problems.append(
                    """
                    \(place): the block differs from '\(name)' in \(snippet.file), at its line \(first + 1): \
                    the document has «\(shownLine)», the source «\(sourceLine)»
                    """
                )
            }
        }
        return problems
    }

    @Test func everySwiftBlockIsACompiledSnippet() throws {
        let documents = try Self.documents()
        let snippets = try Self.snippets()

        let problems = documents.flatMap { Self.problems(in: $0, snippets: snippets) }

        #expect(documents.first?.path == "README.md")
        #expect(documents.count > 1)
        for problem in problems {
            Issue.record(Comment(rawValue: problem))
        }
    }

    @Test func everySnippetIsShownInADocument() throws {
        let shown = Set(try Self.documents().flatMap { Self.blocks(in: $0.text).compactMap(\.name) })

        let unused = try Self.regions().filter { !shown.contains($0.name) }.map { "\($0.name) in \($0.file)" }

        #expect(unused.isEmpty, "snippets no document shows: \(unused.sorted())")
    }

    @Test func everySnippetNameIsUnique() throws {
        let regions = try Self.regions()

        let names = Dictionary(grouping: regions, by: \.name).filter { $0.value.count > 1 }

        #expect(names.isEmpty, "snippet names used twice: \(names.mapValues { $0.map(\.file) })")
    }

    @Test func aChangedBlockIsCaught() throws {
        let text = "<!-- snippet: tour -->\n```swift\nlet changed = true\n```\n"
        let snippets = try Self.snippets()

        let block = try #require(Self.blocks(in: text).first)
        let problems = Self.problems(in: Document(path: "README.md", text: text), snippets: snippets)

        #expect(block.name == "tour")
        #expect(block.lines != snippets["tour"]?.lines)
        #expect(problems.count == 1)
        #expect(problems.first?.hasPrefix("README.md line 2: the block differs from 'tour'") == true)
    }

    @Test func anUnmarkedBlockInAnArticleIsReported() throws {
        let path = "Sources/Strata/Strata.docc/Example.md"
        let text = "# Example\n\nA sample:\n\n```swift\nlet cache = MemoryStorage<String, Int>()\n```\n"
        let snippets = try Self.snippets()

        let problems = Self.problems(in: Document(path: path, text: text), snippets: snippets)

        #expect(problems == ["\(path) line 5: a Swift block without a <!-- snippet: name --> marker"])
    }

    @Test func anExamplesRegionIsShownWithoutItsDocComments() throws {
        let text = """
            public struct Feed {
                // snippet: feed
                /// The posts.
                public var posts: [Int]
                // snippet end
            }
            """

        let example = Self.regions(in: text, file: "Examples/Feed/Feed.swift", keepingDocComments: false)
        let snippet = Self.regions(in: text, file: "Tests/X/Readme/X.swift", keepingDocComments: true)

        #expect(example.map(\.lines) == [["public var posts: [Int]"]])
        #expect(snippet.map(\.lines) == [["/// The posts.", "public var posts: [Int]"]])
    }

    @Test func theAppArticleShowsTheExamplesOwnLines() throws {
        let regions = try Self.regions().filter { $0.name.hasPrefix("image-feed-") }

        let outside = regions.filter { !$0.file.hasPrefix("Examples/ImageFeed/") }.map(\.name)

        #expect(regions.count >= 8)
        #expect(outside.isEmpty, "image-feed snippets kept apart from the example: \(outside)")
    }
}
