package import Foundation
package import Strata
package import _StrataInternals

/// Stands in for the platform's folder calls and records each, so a test sees which protection
/// class and backup exclusion a storage asked for, on which folder, and when; it answers app
/// group lookups from `containers`, and fails every call with `failure` when one is set.
package final class RecordingFolderAttributes: FolderAttributes {
    private let recorded = LockedState<[String]>([])
    private let containers: [String: URL]
    private let failure: Int32?

    package init(containers: [String: URL] = [:], failingWith failure: Int32? = nil) {
        self.containers = containers
        self.failure = failure
    }

    /// Every call so far, in order: `protect <class> <path>`, `exclude <path>` or
    /// `container <identifier>`.
    package var calls: [String] {
        recorded.withLock { $0 }
    }

    package func setProtection(_ protection: FileProtection, ofFolder path: String) throws(SystemCallError) {
        recorded.withLock { $0.append("protect \(protection.rawValue) \(path)") }
        if let failure { throw SystemCallError(call: "setProtection", path: path, errno: failure) }
    }

    package func excludeFromBackup(folder path: String) throws(SystemCallError) {
        recorded.withLock { $0.append("exclude \(path)") }
        if let failure { throw SystemCallError(call: "excludeFromBackup", path: path, errno: failure) }
    }

    package func container(ofAppGroup identifier: String) -> URL? {
        recorded.withLock { $0.append("container \(identifier)") }
        return containers[identifier]
    }
}
