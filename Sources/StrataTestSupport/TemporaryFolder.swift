package import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A fresh, empty folder under the system's temporary folder, for one test. Remove it with
/// ``remove()`` (in a `defer`) when the test ends: the removal is made on a thread of its own (see
/// ``FolderRemoval``), never on the test's.
package struct TemporaryFolder {
    package let url: URL

    package init() throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("strata-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
    }

    package var path: String { url.path }

    /// A path inside the folder that does not exist yet.
    package func child(_ name: String) -> URL {
        url.appendingPathComponent(name, isDirectory: true)
    }

    package func remove() {
        FolderRemoval.remove(url)
    }
}

/// What a folder holds, file by file: relative path, kind, size, permissions and modification
/// time, so a test can tell whether anything in it changed.
package struct FolderListing: Equatable, CustomStringConvertible {
    package struct Item: Equatable {
        package var isFolder: Bool
        package var size: Int
        package var mode: UInt32
        package var modified: Double
    }

    package var items: [String: Item]

    /// Lists `url` recursively, without following symbolic links; `excluding` names relative
    /// paths whose subtree is left out.
    package init(of url: URL, excluding excluded: Set<String> = []) {
        items = [:]
        walk(url.path, relative: "", excluded: excluded)
    }

    private mutating func walk(_ path: String, relative: String, excluded: Set<String>) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: path) else { return }
        for name in names {
            let childRelative = relative.isEmpty ? name : relative + "/" + name
            guard !excluded.contains(childRelative) else { continue }
            let childPath = path + "/" + name
            guard let info = FileStatus(childPath) else { continue }
            items[childRelative] = Item(
                isFolder: info.isFolder,
                size: info.isFolder ? 0 : info.size,
                mode: info.permissions,
                modified: info.modified
            )
            if info.isFolder {
                walk(childPath, relative: childRelative, excluded: excluded)
            }
        }
    }

    /// The relative paths of the files (not folders).
    package var files: [String] {
        items.filter { !$0.value.isFolder }.keys.sorted()
    }

    package var description: String {
        items.keys.sorted().map { "\($0) \(items[$0].map { "\($0.size)" } ?? "")" }.joined(separator: "\n")
    }
}

/// What `lstat` says of a path.
package struct FileStatus: Equatable {
    package var isFolder: Bool
    package var isRegularFile: Bool
    package var size: Int
    /// The permission bits, such as `0o600`.
    package var permissions: UInt32
    package var modified: Double

    package init?(_ path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        let type = UInt32(info.st_mode) & UInt32(S_IFMT)
        isFolder = type == UInt32(S_IFDIR)
        isRegularFile = type == UInt32(S_IFREG)
        size = Int(info.st_size)
        permissions = UInt32(info.st_mode) & 0o7777
        #if canImport(Darwin)
        modified = Double(info.st_mtimespec.tv_sec) + Double(info.st_mtimespec.tv_nsec) / 1e9
        #else
        modified = Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
        #endif
    }
}
