import Foundation
import StrataTestSupport

/// A fresh folder under the system's temporary folder, removed (on the removal thread: see
/// `FolderRemoval`) when the value is released.
final class TemporaryFolder: Sendable {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("strata-sqlite-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// The path of `name` inside the folder.
    func path(_ name: String) -> String {
        url.appendingPathComponent(name).path
    }

    deinit {
        FolderRemoval.remove(url)
    }
}
