package import Foundation
package import _StrataInternals

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The JSON file at the root of a folder a Strata storage keeps (`strata-disk.json` in a
/// ``DiskStorage``'s folder, `strata-objects.json` in an object folder): it names the folder's
/// format, its version and its layout, so that a build opens only the folders it can read and
/// never writes into another program's.
///
/// Every such folder opens by the same rules (``FolderManifest/Kind/open(root:permissions:durable:ownsEntry:check:create:)``):
///
/// - A manifest that is not JSON, or names this format without the fields it needs, is damaged:
///   ``StorageError/Code/corrupted``.
/// - One that names another format is another program's: ``StorageError/Code/invalidConfiguration``.
/// - A newer version, or a layout or compression this build does not know:
///   ``StorageError/Code/unsupported``.
/// - A folder without a manifest is made Strata's only when it holds nothing but what the
///   storage itself leaves there (its own folders, Strata's temporary files) and `.DS_Store`, which
///   Finder leaves in every folder it shows; otherwise ``StorageError/Code/invalidConfiguration``.
///
/// In all these cases nothing in the folder changes. A new folder gets its manifest last, written
/// to a temporary file and renamed, so a folder with a manifest is a complete one.
package struct FolderManifest: Codable, Equatable, Sendable {
    package var format: String
    package var version: Int
    package var layout: String
    /// How records are compressed; `nil` in formats that have no such choice.
    package var compression: String?

    package init(format: String, version: Int, layout: String, compression: String? = nil) {
        self.format = format
        self.version = version
        self.layout = layout
        self.compression = compression
    }

    /// One kind of folder: the file its manifest is in, the format name it must carry and the
    /// newest version this build reads.
    package struct Kind: Sendable {
        package let fileName: String
        package let format: String
        package let newestVersion: Int
        /// The storage name errors carry.
        package let storage: String

        package init(fileName: String, format: String, newestVersion: Int, storage: String) {
            self.fileName = fileName
            self.format = format
            self.newestVersion = newestVersion
            self.storage = storage
        }

        /// Decodes a manifest of this kind, or says why the bytes are not one this build opens.
        package func decode(_ data: Data) throws(FolderManifestError) -> FolderManifest {
            struct Head: Decodable { var format: String? }
            guard let head = try? JSONDecoder().decode(Head.self, from: data) else { throw .unreadable }
            guard head.format == format else { throw .foreignFormat(head.format ?? "none") }
            guard let manifest = try? JSONDecoder().decode(FolderManifest.self, from: data), manifest.version >= 1
            else { throw .unreadable }
            guard manifest.version <= newestVersion else {
                throw .newerVersion(manifest.version, newest: newestVersion)
            }
            return manifest
        }

        /// Opens the folder at `root`: reads its manifest and has `check` accept it, or, in a folder
        /// with none, makes the root, lets `create` make what the storage keeps there and returns
        /// the manifest to write, and writes it. Then removes the temporary manifests that dead
        /// processes left.
        ///
        /// - Parameter ownsEntry: Whether a name at the root, in a folder without a manifest, is
        ///   one the storage itself leaves there (one of its folders, say).
        /// - Throws: The ``StorageError`` the type's rules give, with nothing changed; an I/O
        ///   failure as ``StorageError/Code/io``.
        package func open(
            root: String,
            permissions: (file: UInt16, folder: UInt16),
            durable: Bool,
            ownsEntry: (String) -> Bool = { _ in false },
            check: (FolderManifest) throws(FolderManifestError) -> Void = { _ in },
            create: () throws(SystemCallError) -> FolderManifest
        ) throws(StorageError) -> FolderManifest {
            func ioError(_ error: SystemCallError) -> StorageError {
                StorageError(.io, storage: storage, message: "cannot open \(root): \(error)", underlying: error)
            }
            let existing: FileBytes?
            do { existing = try SystemCalls.readFile(root + "/" + fileName) } catch { throw ioError(error) }
            let manifest: FolderManifest
            if let existing {
                do throws(FolderManifestError) {
                    manifest = try decode(Data(existing.bytes))
                    try check(manifest)
                } catch {
                    throw StorageError(error.code, storage: storage, message: "\(root)/\(fileName): \(error)")
                }
            } else {
                let names: [String]
                do { names = try SystemCalls.contents(of: root) ?? [] } catch { throw ioError(error) }
                let foreign = names.filter { name in
                    name != ".DS_Store" && TemporaryFiles.isAbandoned(name, tag: "manifest") == nil && !ownsEntry(name)
                }
                guard foreign.isEmpty else {
                    throw StorageError(
                        .invalidConfiguration,
                        storage: storage,
                        message: "\(root) holds \(foreign.count) entries but no \(fileName): "
                            + "it is not a folder Strata made, so nothing was changed"
                    )
                }
                do {
                    try SystemCalls.makeFolders(root, permissions: mode_t(permissions.folder), durable: durable)
                    manifest = try create()
                    if durable { try SystemCalls.syncFolder(root) }
                    try write(manifest, root: root, permissions: permissions.file, durable: durable)
                } catch {
                    throw ioError(error)
                }
            }
            for name in (try? SystemCalls.contents(of: root)) ?? [] {
                TemporaryFiles.removeIfAbandoned(name, in: root, tag: "manifest")
            }
            return manifest
        }

        /// Writes `manifest` at `root` atomically: a temporary file, renamed into place.
        package func write(
            _ manifest: FolderManifest,
            root: String,
            permissions: UInt16,
            durable: Bool
        ) throws(SystemCallError) {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            // Four strings and an integer always encode.
            let data = (try? encoder.encode(manifest)) ?? Data()
            try SystemCalls.writeAtomically(
                data,
                to: root + "/" + fileName,
                temporaryPath: root + "/" + TemporaryFiles.name(tag: "manifest"),
                folder: root,
                permissions: mode_t(permissions),
                durable: durable
            )
        }
    }
}

/// Why a manifest is not one this build opens.
package enum FolderManifestError: Error, Equatable, CustomStringConvertible {
    /// Not JSON, or without the fields its format has.
    case unreadable
    /// Names another format (`"none"` when it names none).
    case foreignFormat(String)
    /// A version newer than `newest`, the newest this build reads.
    case newerVersion(Int, newest: Int)
    /// A layout, compression or other choice this build does not know, described.
    case unsupported(String)

    /// The code of the ``StorageError`` opening the folder throws.
    package var code: StorageError.Code {
        switch self {
        case .unreadable: .corrupted
        case .foreignFormat: .invalidConfiguration
        case .newerVersion, .unsupported: .unsupported
        }
    }

    package var description: String {
        switch self {
        case .unreadable: "the manifest is damaged: it is not JSON of the shape its format writes"
        case .foreignFormat(let format): "the manifest names format '\(format)': it is not a folder Strata made"
        case .newerVersion(let version, let newest):
            "the folder has format version \(version); this build reads up to \(newest)"
        case .unsupported(let what): "the folder uses \(what), which this build does not read"
        }
    }
}
