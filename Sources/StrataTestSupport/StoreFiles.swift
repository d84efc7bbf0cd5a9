package import Foundation
import Strata
import _StrataInternals

/// The files of a disk folder as they are on disk, read without the storage's index: value files,
/// temporary files, and the keys and sizes the value files record.
package struct StoreFiles {
    /// The relative paths of value files: `<2 hex>/<32 hex>` (or, in a folder of the nested
    /// layout, `<1 hex>/<2 hex>/<32 hex>`) with an optional `-<probe>`.
    package var records: [String] = []
    /// The relative paths of temporary files (`.tmp-…`) anywhere in the folder.
    package var temporaries: [String] = []
    /// Everything else that is not a folder or the manifest.
    package var others: [String] = []
    /// The key each readable value file records, by relative path.
    package var keys: [String: String] = [:]
    /// Each value file's size, by relative path.
    package var sizes: [String: Int] = [:]

    package init(of folder: URL) {
        let listing = FolderListing(of: folder)
        for path in listing.files {
            let name = path.split(separator: "/").last.map(String.init) ?? path
            if name.hasPrefix(".tmp-") {
                temporaries.append(path)
            } else if path.wholeMatch(of: /([0-9a-f]{2}|[0-9a-f]\/[0-9a-f]{2})\/[0-9a-f]{32}(-[0-9]+)?/) != nil {
                records.append(path)
                sizes[path] = listing.items[path]?.size
                if let data = FileManager.default.contents(atPath: folder.path + "/" + path) {
                    keys[path] = data.withUnsafeBytes { try? DiskRecordHeader.decode($0).key }
                }
            } else if path != DiskStorage.manifestName && path != "strata-index.bin"
                && !path.hasPrefix(DiskStorage.lockFolderName + "/")
            {
                others.append(path)
            }
        }
    }

    /// The sum of the value files' sizes.
    package var totalSize: Int { sizes.values.reduce(0, +) }
}

/// The hexadecimal SHA-256 digest of `key`'s UTF-8 bytes, cut to 128 bits: the name of its file.
package func fileName(forKey key: String) -> String {
    SHA256.hash(key.utf8).prefix(16).map { String(format: "%02x", $0) }.joined()
}

/// The relative path of `key`'s file when no other key shares its digest, in the layout of a
/// new folder (`di/digest`) or, with `nested`, in that of a folder made before manifest version 2
/// (`d/ig/digest`).
package func relativePath(forKey key: String, nested: Bool = false) -> String {
    let name = fileName(forKey: key)
    return nested ? "\(name.prefix(1))/\(name.dropFirst().prefix(2))/\(name)" : "\(name.prefix(2))/\(name)"
}
