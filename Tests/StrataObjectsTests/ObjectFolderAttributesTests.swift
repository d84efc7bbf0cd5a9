import Foundation
import Strata
import StrataTestSupport
import Testing

@testable import StrataObjects

/// An object folder takes the protection class and backup exclusion it asks for when it opens and
/// when its root is recreated, and opens in an app group's container.
@Suite(.onTestThreads) struct ObjectFolderAttributesTests {
    private static func options(_ attributes: RecordingFolderAttributes) -> ObjectFolder.Options {
        var options = ObjectFolder.Options(fileProtection: .completeUnlessOpen, isExcludedFromBackup: true)
        options.folderAttributes = attributes
        return options
    }

    @Test func openingAndRecreatingTheRootSetTheAttributes() async throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let attributes = RecordingFolderAttributes()
        let folder = try ObjectFolder(
            url: scratch.url.appendingPathComponent("notes"),
            options: Self.options(attributes)
        )
        let root = scratch.url.appendingPathComponent("notes").standardizedFileURL.path
        let once = ["protect completeUnlessOpen \(root)", "exclude \(root)"]
        #expect(attributes.calls == once)

        let store = ObjectStore<Note>(backend: folder)
        try await store.save(Note(id: UUID(), title: "first"))
        #expect(attributes.calls == once)
        try FileManager.default.removeItem(atPath: root)
        let note = Note(id: UUID(), title: "after the folder went")
        try await store.save(note)

        #expect(attributes.calls == once + once)
        #expect(try await store.object(withID: note.id)?.title == "after the folder went")
    }

    @Test func anAppGroupFolderOpensInTheContainer() throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let attributes = RecordingFolderAttributes(containers: ["group.com.example.notes": scratch.url])
        let folder = try ObjectFolder(
            folder: "notes",
            in: .appGroup("group.com.example.notes"),
            options: Self.options(attributes)
        )
        #expect(folder.url == scratch.url.appendingPathComponent("notes").standardizedFileURL)
        #expect(attributes.calls.first == "container group.com.example.notes")
    }

    #if os(Linux)
    @Test func onLinuxTheExcludedFolderIsTaggedForBackupPrograms() throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        _ = try ObjectFolder(url: scratch.url, options: ObjectFolder.Options(isExcludedFromBackup: true))
        let tag = try String(contentsOf: scratch.url.appendingPathComponent("CACHEDIR.TAG"), encoding: .utf8)
        #expect(tag.hasPrefix("Signature: 8a477f597d28d172789f06886806bc55\n"))
    }
    #endif
}
