package import Foundation
package import _StrataInternals

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// When the system lets an app read a folder's files: Apple's data-protection classes.
///
/// A ``DiskStorage`` or an object folder given one sets it on its folder, and the files and
/// folders it creates inside take the folder's class. An app that reads a cache in the
/// background (a widget, a background refresh, a share extension) needs a class that allows it
/// while the device is locked: ``completeUntilFirstUserAuthentication``, the system's default, or
/// ``unprotected``.
///
/// On Linux there are no protection classes: the option is accepted and does nothing; keep data
/// that must be protected at rest on an encrypted volume (fscrypt, LUKS).
public enum FileProtection: String, Sendable, Hashable, CaseIterable {
    /// Readable only while the device is unlocked (`NSFileProtectionComplete`).
    case complete
    /// Files open when the device locks stay readable; new files can be created while locked
    /// (`NSFileProtectionCompleteUnlessOpen`).
    case completeUnlessOpen
    /// Readable from the first unlock after a restart on (`NSFileProtectionCompleteUntilFirstUserAuthentication`):
    /// the system's default.
    case completeUntilFirstUserAuthentication
    /// Always readable (`NSFileProtectionNone`; named so that it cannot be read as an optional's
    /// `nil`).
    case unprotected
}

/// The platform calls that give a storage's folder its data-protection class and its exclusion
/// from backups, and find an app group's shared container: one small interface, with the Darwin
/// and Linux branches side by side in ``SystemFolderAttributes``; tests put a recorder in its
/// place (`DiskStorage.Options.folderAttributes`).
package protocol FolderAttributes: Sendable {
    /// Gives the folder at `path` the protection class `protection`, which the files and folders
    /// created in it take.
    func setProtection(_ protection: FileProtection, ofFolder path: String) throws(SystemCallError)
    /// Marks the folder at `path` as one that backups skip, with everything in it.
    func excludeFromBackup(folder path: String) throws(SystemCallError)
    /// The shared container of the app group `identifier`, or `nil` when the app may not use it.
    func container(ofAppGroup identifier: String) -> URL?
}

extension FolderAttributes {
    /// Applies the protection class and backup exclusion an option set asks for, if any, to the
    /// folder at `path`: when a storage opens its folder, and again when it recreates one that
    /// was removed under it.
    package func apply(
        protection: FileProtection?,
        excludedFromBackup: Bool,
        toFolder path: String
    ) throws(SystemCallError) {
        if let protection { try setProtection(protection, ofFolder: path) }
        if excludedFromBackup { try excludeFromBackup(folder: path) }
    }
}

/// The platform's own calls.
///
/// - Darwin: `FileManager.setAttributes(_:ofItemAtPath:)` with `FileAttributeKey.protectionKey`;
///   `URLResourceValues.isExcludedFromBackup` set through `URL.setResourceValues(_:)` (kept as an
///   extended attribute of the folder, which backups and iCloud honour for the whole tree);
///   `FileManager.containerURL(forSecurityApplicationGroupIdentifier:)`, `nil` when the group is
///   not among the app's `com.apple.security.application-groups` entitlements.
/// - Linux: protection classes do not exist, so setting one does nothing. A folder excluded from
///   backups gets a `CACHEDIR.TAG` file, the Cache Directory Tagging convention that `tar
///   --exclude-caches`, BorgBackup, restic (`--exclude-caches`) and others honour. An app group's
///   container is a folder named after the group in `$XDG_DATA_HOME` (`~/.local/share` when it is
///   not set), which the processes of one user share.
package struct SystemFolderAttributes: FolderAttributes {
    package init() {}

    #if canImport(Darwin)
    package func setProtection(_ protection: FileProtection, ofFolder path: String) throws(SystemCallError) {
        let type: FileProtectionType =
            switch protection {
            case .complete: .complete
            case .completeUnlessOpen: .completeUnlessOpen
            case .completeUntilFirstUserAuthentication: .completeUntilFirstUserAuthentication
            case .unprotected: .none
            }
        do {
            try FileManager.default.setAttributes([.protectionKey: type], ofItemAtPath: path)
        } catch {
            throw SystemCallError(call: "setAttributes(protectionKey)", path: path, errno: Self.errno(of: error))
        }
    }

    package func excludeFromBackup(folder path: String) throws(SystemCallError) {
        var url = URL(fileURLWithPath: path, isDirectory: true)
        var values = URLResourceValues()
        values.isExcludedFromBackup = true
        do {
            try url.setResourceValues(values)
        } catch {
            throw SystemCallError(
                call: "setResourceValues(isExcludedFromBackup)",
                path: path,
                errno: Self.errno(of: error)
            )
        }
    }

    package func container(ofAppGroup identifier: String) -> URL? {
        FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: identifier)
    }

    /// The POSIX error under a Foundation error, or `EIO`.
    private static func errno(of error: any Error) -> Int32 {
        let underlying = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError
        if let underlying, underlying.domain == NSPOSIXErrorDomain { return Int32(underlying.code) }
        return EIO
    }
    #else
    package func setProtection(_ protection: FileProtection, ofFolder path: String) throws(SystemCallError) {}

    /// The tag file's name and its required first line, from the Cache Directory Tagging
    /// Specification.
    package static let cacheDirectoryTagName = "CACHEDIR.TAG"
    package static let cacheDirectoryTag =
        "Signature: 8a477f597d28d172789f06886806bc55\n"
        + "# This file is a cache directory tag created by Strata: backup programs that honour\n"
        + "# the Cache Directory Tagging convention skip this folder.\n"

    package func excludeFromBackup(folder path: String) throws(SystemCallError) {
        let tag = path + "/" + Self.cacheDirectoryTagName
        guard !SystemCalls.fileExists(tag) else { return }
        try SystemCalls.writeAtomically(
            Array(Self.cacheDirectoryTag.utf8),
            to: tag,
            temporaryPath: path + "/" + TemporaryFiles.name(tag: "cachedir"),
            folder: path,
            permissions: 0o644,
            durable: false
        )
    }

    package func container(ofAppGroup identifier: String) -> URL? {
        let environment = ProcessInfo.processInfo.environment
        let data =
            environment["XDG_DATA_HOME"].flatMap {
                $0.hasPrefix("/") ? URL(fileURLWithPath: $0, isDirectory: true) : nil
            }
            ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".local/share", isDirectory: true)
        return data.appendingPathComponent(identifier, isDirectory: true)
    }
    #endif
}
