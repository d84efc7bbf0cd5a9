import Foundation
import Strata
import StrataObjects
import StrataTestSupport
import Testing

@Suite(.onTestThreads) struct ObjectCommandTests {
    /// Runs the `strata` executable the test target depends on.
    private func strata(_ arguments: [String]) async throws -> (status: Int32, output: String, error: String) {
        let executable = try #require(Self.executable(), "the strata executable was not built")
        let result = await Shell.run([executable.path] + arguments)
        return (result.status, result.output, result.errors)
    }

    private static func executable(filePath: String = #filePath) -> URL? {
        var candidates: [URL] = []
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
            candidates.append(bundle.bundleURL.deletingLastPathComponent())
        }
        if let argument = CommandLine.arguments.first {
            candidates.append(URL(fileURLWithPath: argument).resolvingSymlinksInPath().deletingLastPathComponent())
        }
        let package = URL(fileURLWithPath: filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        candidates.append(package.appendingPathComponent(".build/debug"))
        return candidates.map { $0.appendingPathComponent("strata") }.first {
            FileManager.default.isExecutableFile(atPath: $0.path)
        }
    }

    private func makeStore(in scratch: ScratchFolder) async throws -> [Note] {
        let store = try ObjectStore<Note>(url: scratch.url)
        let notes = [
            Note(title: "premium alpha", tags: ["red"], priority: 3),
            Note(title: "basic beta", tags: ["blue", "red"], priority: 1),
            Note(title: "premium gamma", tags: [], priority: 2),
        ]
        try await store.save(contentsOf: notes)
        try await store.setAttachment(Data(count: 2048), named: "scan.pdf", forObjectWithID: notes[0].id)
        return notes
    }

    @Test func listShowsEveryID() async throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let notes = try await makeStore(in: scratch)

        let result = try await strata(["objects", "ls", "--folder", scratch.path])

        #expect(result.status == 0)
        for note in notes { #expect(result.output.contains(note.id.uuidString)) }
        #expect(result.output.contains("3 objects"))
    }

    @Test func showPrintsTheJSONAndAttachments() async throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let notes = try await makeStore(in: scratch)

        let shown = try await strata(["objects", "show", "--folder", scratch.path, notes[0].id.uuidString])
        let missing = try await strata(["objects", "show", "--folder", scratch.path, UUID().uuidString])

        #expect(shown.status == 0)
        #expect(shown.output.contains("\"title\" : \"premium alpha\""))
        #expect(shown.output.contains("attachment scan.pdf (2.0 KiB)"))
        #expect(missing.status == 1)
    }

    @Test func queryFiltersSortsAndLimits() async throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        _ = try await makeStore(in: scratch)

        let premium = try await strata([
            "objects", "query", "--folder", scratch.path, "--contains", "title=premium", "--sort", "priority",
        ])
        let red = try await strata([
            "objects", "query", "--folder", scratch.path, "--contains", "tags=red", "--sort", "priority:desc",
            "--limit", "1",
        ])
        let exact = try await strata(["objects", "query", "--folder", scratch.path, "--where", "priority=1"])

        #expect(premium.status == 0)
        let titles = premium.output.split(separator: "\n").compactMap { line in
            (try? JSONDecoder().decode(Note.self, from: Data(line.utf8)))?.title
        }
        #expect(titles == ["premium gamma", "premium alpha"])
        #expect(red.output.split(separator: "\n").count == 1)
        #expect(red.output.contains("premium alpha"))
        #expect(exact.output.contains("basic beta"))
        #expect(!exact.output.contains("premium"))
    }

    @Test func removeDeletesObjectsAndFailsOnMissingOnes() async throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let notes = try await makeStore(in: scratch)

        let removed = try await strata(["objects", "rm", "--folder", scratch.path, notes[0].id.uuidString])
        let missing = try await strata(["objects", "rm", "--folder", scratch.path, notes[0].id.uuidString])

        #expect(removed.status == 0)
        #expect(missing.status == 1)
        let store = try ObjectStore<Note>(url: scratch.url)
        #expect(Set(try await store.all()) == Set(notes.dropFirst()))
        #expect(!scratch.files().contains { $0.contains("scan.pdf") })
    }

    @Test func aFolderThatIsNotAStoreIsRefusedAndLeftAlone() async throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }

        let result = try await strata(["objects", "ls", "--folder", scratch.path])

        #expect(result.status != 0)
        #expect(result.error.contains("not an object store"))
        #expect(scratch.files().isEmpty)
    }
}

extension ObjectCommandTests {
    @Test func anotherProcesssRemovalIsSeenAfterReload() async throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let notes = try await makeStore(in: scratch)
        let store = try ObjectStore<Note>(url: scratch.url)
        #expect(try await store.count(matching: nil) == 3)  // loaded into memory
        let changes = store.changes()

        let removed = try await strata(["objects", "rm", "--folder", scratch.path, notes[1].id.uuidString])
        try await store.reload()

        #expect(removed.status == 0)
        #expect(Set(try await store.all()) == [notes[0], notes[2]])
        var iterator = changes.makeAsyncIterator()
        #expect(await iterator.next() == .deleted(notes[1].id))
    }
}
