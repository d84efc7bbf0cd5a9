import Foundation
import StrataTestSupport
import Testing

/// Every Swift block in README.md is a region of a snippet file under `Tests/*/Readme/`, which the
/// test targets compile: the README shows exactly those lines, so it cannot drift from the API.
///
/// A block is marked in the README by `<!-- snippet: name -->` on the line before its fence; its
/// source is the region between `// README: name` and `// README end`, indented as in the file.
/// `import` lines that open a README block must be imports of the snippet's file.
@Suite(.onTestThreads) struct ReadmeTests {
    struct Snippet {
        var lines: [String]
        var imports: Set<String>
        var file: String
    }

    struct Block {
        var name: String?
        var lines: [String]
        var line: Int
    }

    static let root: URL = {
        var folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: folder.appendingPathComponent("Package.swift").path) {
            folder.deleteLastPathComponent()
        }
        return folder
    }()

    /// The README's Swift blocks, with the snippet name marked before each.
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

    /// Every `// README: name` region in the snippet files, dedented.
    static func snippets() throws -> [String: Snippet] {
        var snippets: [String: Snippet] = [:]
        let tests = root.appendingPathComponent("Tests")
        for target in try FileManager.default.contentsOfDirectory(atPath: tests.path) {
            let folder = tests.appendingPathComponent(target).appendingPathComponent("Readme")
            guard let files = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { continue }
            for file in files where file.hasSuffix(".swift") && file != "ReadmeTests.swift" {
                let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
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
                var index = 0
                while index < lines.count {
                    guard let match = lines[index].firstMatch(of: /^( *)\/\/ README: ([\w-]+)$/) else {
                        index += 1
                        continue
                    }
                    let indent = match.1.count
                    var region: [String] = []
                    index += 1
                    while index < lines.count, lines[index].trimmingCharacters(in: .whitespaces) != "// README end" {
                        let line = lines[index]
                        region.append(line.count >= indent ? String(line.dropFirst(indent)) : "")
                        index += 1
                    }
                    snippets[String(match.2)] = Snippet(lines: region, imports: imports, file: "\(target)/\(file)")
                }
            }
        }
        return snippets
    }

    @Test func everySwiftBlockInTheReadmeIsACompiledSnippet() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let blocks = Self.blocks(in: readme)
        let snippets = try Self.snippets()

        #expect(!blocks.isEmpty)
        for block in blocks {
            guard let name = block.name else {
                Issue.record("README.md line \(block.line): a Swift block without a <!-- snippet: name --> marker")
                continue
            }
            guard let snippet = snippets[name] else {
                Issue.record("README.md line \(block.line): no region '// README: \(name)' under Tests/*/Readme/")
                continue
            }
            var lines = block.lines[...]
            while let first = lines.first, first.hasPrefix("import ") {
                let module = String(first.dropFirst("import ".count))
                #expect(snippet.imports.contains(module), "\(snippet.file) does not import \(module)")
                lines = lines.dropFirst()
            }
            while lines.first?.isEmpty == true { lines = lines.dropFirst() }
            let shown = Array(lines)
            if shown != snippet.lines {
                let first =
                    zip(shown, snippet.lines).enumerated().first { $0.element.0 != $0.element.1 }?.offset
                    ?? min(shown.count, snippet.lines.count)
                let readmeLine = first < shown.count ? shown[first] : "(end of block)"
                let sourceLine = first < snippet.lines.count ? snippet.lines[first] : "(end of region)"
                Issue.record(
                    """
                    README.md block at line \(block.line) differs from '\(name)' in \(snippet.file), \
                    at its line \(first + 1): README has «\(readmeLine)», the source «\(sourceLine)»
                    """
                )
            }
        }
    }

    @Test func everySnippetIsShownInTheReadme() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let shown = Set(Self.blocks(in: readme).compactMap(\.name))

        let unused = try Self.snippets().keys.filter { !shown.contains($0) }

        #expect(unused.isEmpty, "snippets not shown in README.md: \(unused.sorted())")
    }

    @Test func aChangedBlockIsCaught() throws {
        let text = "<!-- snippet: tour -->\n```swift\nlet changed = true\n```\n"
        let snippets = try Self.snippets()

        let block = try #require(Self.blocks(in: text).first)

        #expect(block.name == "tour")
        #expect(block.lines != snippets["tour"]?.lines)
    }
}
