internal import CStrata
package import Foundation
import Synchronization

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension SystemCalls {
    /// Reads a whole regular file of at most `limit` bytes if, and only if, that needs no wait for
    /// the disk: every folder of the path in the kernel's lookup cache and every byte in the page
    /// cache. `nil` otherwise, for whatever reason (not cached, missing, larger than `limit`, not a
    /// regular file, a platform or kernel without these calls); the caller then reads the file
    /// the ordinary way, on a thread that may block. Never throws and never waits for I/O, so a
    /// cooperative-pool thread may call it.
    package static func readFileIfCached(_ path: UnsafePointer<CChar>, limit: Int) -> FileBytes? {
        guard let descriptor = openCached(path) else { return nil }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG, Int(info.st_size) <= limit else {
            return nil
        }
        let count = Int(info.st_size)
        let file = FileBytes(count: count, modified: modificationTime(info), fileSize: count)
        guard count > 0 else { return file }
        guard let base = file.buffer.baseAddress else { return nil }
        return readCached(descriptor, into: base, count: count) == count ? file : nil
    }

    /// ``readFileIfCached(_:limit:)`` as a `Data` that takes over the bytes read.
    package static func readDataIfCached(_ path: String, limit: Int) -> Data? {
        path.withCString { readFileIfCached($0, limit: limit) }?.movingIntoData()
    }

    /// ``readFileIfCached(_:limit:)`` of a file the caller expects to be `expectedSize` bytes
    /// long, without asking the system for its size and times (as
    /// ``FileBytes/read(_:expectedSize:)``): `nil` when it is longer, and also when fewer bytes
    /// than it holds were in the page cache, which the caller tells from a short record.
    /// ``FileBytes/modified`` is NaN.
    package static func readFileIfCached(_ path: UnsafePointer<CChar>, expectedSize: Int) -> FileBytes? {
        guard let descriptor = openCached(path) else { return nil }
        defer { close(descriptor) }
        return FileBytes.read(expectedSize: expectedSize) { readCached(descriptor, into: $0, count: $1) }
    }

    /// Opens `path` if every folder on the way is in the kernel's lookup cache; the caller closes
    /// the descriptor.
    private static func openCached(_ path: UnsafePointer<CChar>) -> Int32? {
        guard cachedReadsWork.load(ordering: .relaxed) else { return nil }
        let descriptor = strata_open_cached(AT_FDCWD, path)
        if descriptor < 0 {
            if errno == ENOSYS || errno == EINVAL || errno == EPERM {
                cachedReadsWork.store(false, ordering: .relaxed)
            }
            return nil
        }
        return descriptor
    }

    /// Reads up to `count` bytes from the start of `descriptor` if the page cache holds them;
    /// returns how many it read, or -1.
    ///
    /// Only a kernel without `preadv2` turns cached reads off for the process. A file system that
    /// cannot read without waiting (tmpfs, where `RWF_NOWAIT` is `EOPNOTSUPP`; some network file
    /// systems) refuses the reads of its own files alone: a storage in `/dev/shm` must not cost
    /// every other storage of the process its reads in place.
    private static func readCached(_ descriptor: Int32, into base: UnsafeMutableRawPointer, count: Int) -> Int {
        let read = strata_pread_cached(descriptor, base, count, 0)
        if read < 0, errno == ENOSYS {
            cachedReadsWork.store(false, ordering: .relaxed)
        }
        return read
    }

    /// Whether this platform has the calls that read without waiting for the disk: Linux has
    /// them (openat2 with `RESOLVE_CACHED` from 5.12, preadv2 with `RWF_NOWAIT`); Darwin has
    /// neither, so every read there goes to the I/O threads. A kernel too old for them is found
    /// out at the first call instead.
    package static var platformReadsInPlace: Bool {
        #if os(Linux)
        true
        #else
        false
        #endif
    }

    /// Whether this kernel answers ``readFileIfCached(_:limit:)``; cleared at the first sign that
    /// it does not (no `openat2` or `preadv2`, a `RESOLVE_CACHED` it does not know, a sandbox that
    /// refuses the call), so a platform without them pays one failed call.
    private static let cachedReadsWork = Atomic<Bool>(true)

}

/// When each thread last yielded after a read in place, in the thread's own slot, so that a loop
/// of such reads on any thread yields every millisecond, however many loops share the process.
package enum ReadsInPlaceOnThisThread {
    /// The longest a thread answers reads in place without yielding once.
    package static let slice: UInt64 = 1_000_000

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// Whether this thread has gone ``slice`` since it last yielded (or first read in place); if
    /// so, the caller yields and the time starts again.
    package static func isDueToYield() -> Bool {
        let now = monotonicNanoseconds()
        let last = UInt64(UInt(bitPattern: pthread_getspecific(key)))
        guard last == 0 || now &- last >= slice else { return false }
        pthread_setspecific(key, UnsafeRawPointer(bitPattern: UInt(now)))
        return last != 0
    }
}
