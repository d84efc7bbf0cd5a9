package import Foundation
import _StrataInternals

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Removes the tests' scratch folders on a thread of its own, so that a test's cleanup never holds
/// a cooperative-pool thread in file system calls.
///
/// Removing a folder is one `unlink` or `rmdir` per entry, and each of those can wait on the file
/// system's journal while the disk is busy with the other tests' syncs: in a parallel run on two
/// cores, both pool threads were found in `rmdir` for more than ten seconds, and every deadline of
/// every other test (a PostgreSQL query's 20 s limit among them) expired behind them. A removal
/// queued here returns at once; the queue is emptied before the process exits.
package enum FolderRemoval {
    private struct Queue {
        var pending: [URL] = []
        var isRemoving = false
        var worker: Worker = .notStarted
    }

    private enum Worker {
        case notStarted, running, unavailable
    }

    private static let queue = LockedState(Queue())
    private static let work = DispatchSemaphore(value: 0)

    /// Removes `url` and everything in it, later, on the removal thread; at once on the caller's
    /// thread when that thread cannot be started.
    package static func remove(_ url: URL) {
        let worker = queue.withLock { queue -> Worker in
            let worker = queue.worker
            if worker != .unavailable { queue.pending.append(url) }
            if worker == .notStarted { queue.worker = .running }
            return worker
        }
        switch worker {
        case .notStarted:
            guard let thread = POSIXThread.start(run) else {
                queue.withLock { $0.worker = .unavailable }
                removeNow()
                return
            }
            pthread_detach(thread)
            atexit { FolderRemoval.finish() }
            work.signal()
        case .running:
            work.signal()
        case .unavailable:
            try? FileManager.default.removeItem(at: url)
        }
    }

    /// The removal thread: one folder at a time, in the order they were queued.
    private static func run() {
        while true {
            work.wait()
            removeNow()
        }
    }

    private static func removeNow() {
        while let url = queue.withLock({ queue -> URL? in
            guard !queue.pending.isEmpty else { return nil }
            queue.isRemoving = true
            return queue.pending.removeFirst()
        }) {
            try? FileManager.default.removeItem(at: url)
            queue.withLock { $0.isRemoving = false }
        }
    }

    /// At exit: waits for the queued removals, for at most a minute.
    private static func finish() {
        for _ in 0..<6_000 {
            if queue.withLock({ $0.pending.isEmpty && !$0.isRemoving }) { return }
            usleep(10_000)
        }
    }
}
