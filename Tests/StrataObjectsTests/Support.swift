import Foundation
import Strata
import StrataObjects
import StrataSQLite
import StrataSQLiteObjects
import StrataTestSupport
import Testing

/// A note: the object most tests store.
struct Note: Codable, Identifiable, Sendable, Hashable {
    var id = UUID()
    var title: String
    var body = ""
    var tags: [String] = []
    var priority = 0
    var rating: Double?
    var counter = 0
}

/// A user and a message, SHELF's example types, with references between them.
struct User: Codable, Identifiable, Sendable, Hashable {
    var id = UUID()
    var name: String
}

struct Message: Codable, Identifiable, Sendable, Hashable {
    var id = UUID()
    var author: Reference<User>
    var content: String
    var replyTo: Reference<Message>?
    var readers: [Reference<User>] = []
}

/// An object with a `String` ID, for hostile IDs.
struct Tagged: Codable, Identifiable, Sendable, Hashable {
    var id: String
    var value: Int
}

/// A fresh folder under the system's temporary folder for one test; `remove()` it in a `defer`.
struct ScratchFolder {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("strata-objects-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
    }

    var path: String { url.path }

    func child(_ name: String) -> URL { url.appendingPathComponent(name, isDirectory: true) }

    func remove() { FolderRemoval.remove(url) }

    /// Every file below the folder, relative, sorted.
    func files() -> [String] {
        guard let enumerator = FileManager.default.enumerator(atPath: path) else { return [] }
        var files: [String] = []
        while let next = enumerator.nextObject() as? String {
            var isFolder: ObjCBool = false
            if FileManager.default.fileExists(atPath: path + "/" + next, isDirectory: &isFolder), !isFolder.boolValue {
                files.append(next)
            }
        }
        return files.sorted()
    }
}

/// The backends every store test runs on.
enum BackendKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case folder, memory, sqlite

    var testDescription: String { rawValue }

    /// A store of `Object` on this backend, in `scratch` for the folder.
    func store<Object>(_: Object.Type = Object.self, in scratch: ScratchFolder) throws -> ObjectStore<Object> {
        switch self {
        case .folder: try ObjectStore<Object>(url: scratch.child("store"))
        case .memory: ObjectStore<Object>.inMemory()
        case .sqlite:
            ObjectStore<Object>(backend: try SQLiteObjectBackend<Object>(path: scratch.path + "/store.sqlite"))
        }
    }
}
