import Foundation
import StrataTestSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A small tmpfs mounted for one test, to fill a file system or make it read-only for real.
///
/// Mounting needs Linux and root (`CAP_SYS_ADMIN`); ``isAvailable`` says whether this machine
/// allows it, so tests that need one can be skipped with a reason elsewhere. Call ``unmount()``
/// in a `defer`.
struct TemporaryMount {
    /// The mount point.
    let url: URL

    /// Whether a tmpfs can be mounted here, checked once by mounting one.
    static let isAvailable: Bool = {
        #if os(Linux)
        guard geteuid() == 0, let folder = try? TemporaryFolder() else { return false }
        defer { folder.remove() }
        guard mount("tmpfs", folder.path, "tmpfs", 0, "size=16k") == 0 else { return false }
        umount2(folder.path, Int32(MNT_DETACH))
        return true
        #else
        return false
        #endif
    }()

    /// Mounts a tmpfs of `byteCount` bytes at a new folder inside `parent`.
    init(byteCount: Int, in parent: URL) throws {
        url = parent.appendingPathComponent("mount-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
        #if os(Linux)
        guard mount("tmpfs", url.path, "tmpfs", 0, "size=\(byteCount),mode=0700") == 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EPERM)
        }
        #else
        throw POSIXError(.ENOTSUP)
        #endif
    }

    /// Makes the file system read-only, or writable again.
    func remount(readOnly: Bool) throws {
        #if os(Linux)
        var flags = UInt(MS_REMOUNT)
        if readOnly { flags |= UInt(MS_RDONLY) }
        guard mount("tmpfs", url.path, "tmpfs", flags, nil) == 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EPERM)
        }
        #endif
    }

    func unmount() {
        #if os(Linux)
        umount2(url.path, Int32(MNT_DETACH))
        #endif
        try? FileManager.default.removeItem(at: url)
    }
}
