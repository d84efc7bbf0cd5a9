import Foundation
import Synchronization

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A few threads of its own for blocking work (file and database I/O, decoding many values), so
/// that async methods never run it on their caller's executor or hold a cooperative-pool thread
/// in a blocking system call.
///
/// The design follows swift-nio's `NIOThreadPool`: a queue behind a lock and a condition, and
/// threads that take jobs from it. Threads start on demand, up to ``maximumThreadCount``, and
/// stay for the life of the process. A thread that finished a job keeps looking for the next one
/// for a few microseconds before it sleeps: back-to-back requests (a loop of awaited reads) then
/// pay no wake-up. A job that blocks (SQLite's busy timeout, a slow disk) holds one of these
/// threads, never one of the cooperative pool's, so timers and other tasks keep running.
///
/// Any task or thread may use it.
package final class BlockingIOPool: @unchecked Sendable {
    // Safe: `queue`, `idleThreads`, `threadCount` and `spinningThreads` are only touched with
    // `mutex` held; the condition is only waited on with it held.

    /// The pool every storage in the process shares.
    ///
    /// As many threads as cores, and at least two, as `NIOThreadPool.singleton` has: the pool
    /// also decodes and runs queries, work that only competes with everything else for the
    /// cores if it gets more threads than there are cores.
    package static let shared = BlockingIOPool(maximumThreadCount: max(2, ProcessInfo.processInfo.activeProcessorCount))

    private typealias Job = () -> Void

    /// The most threads the pool starts.
    package let maximumThreadCount: Int
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    private var queue: [Job] = []
    private var head = 0
    private var threadCount = 0
    private var idleThreads = 0
    private var spinningThreads = 0
    /// Jobs queued and not yet taken, for spinning threads to watch without the lock.
    private let pending = Atomic<Int>(0)

    package init(maximumThreadCount: Int) {
        precondition(maximumThreadCount > 0, "a pool needs at least one thread")
        self.maximumThreadCount = maximumThreadCount
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        pthread_cond_init(condition, nil)
    }

    deinit {
        // Only the shared pool's threads ever run, and it is never deinitialised; a pool made in
        // a test must have finished its jobs, and its threads keep it alive until then.
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Runs `body` on one of the pool's threads and returns its result; the caller suspends
    /// meanwhile, holding no thread.
    ///
    /// The job runs to completion once it is queued: cancelling the calling task does not stop a
    /// system call under way.
    package func run<Result: Sendable, Failure: Error>(
        _ body: @escaping @Sendable () throws(Failure) -> Result
    ) async throws(Failure) -> Result {
        let outcome = await withUnsafeContinuation {
            (continuation: UnsafeContinuation<Swift.Result<Result, Failure>, Never>) in
            submit {
                let outcome: Swift.Result<Result, Failure>
                do throws(Failure) {
                    outcome = .success(try body())
                } catch {
                    outcome = .failure(error)
                }
                continuation.resume(returning: outcome)
            }
        }
        return try outcome.get()
    }

    /// Whether the calling thread is one of this process's pool threads.
    package static var isPoolThread: Bool {
        pthread_getspecific(poolThreadKey) != nil
    }

    private func submit(_ job: @escaping Job) {
        pthread_mutex_lock(mutex)
        queue.append(job)
        pending.add(1, ordering: .relaxed)
        let startThread = idleThreads == 0 && spinningThreads == 0 && threadCount < maximumThreadCount
        if startThread { threadCount += 1 }
        let wake = idleThreads > 0 && spinningThreads == 0
        pthread_mutex_unlock(mutex)
        if wake { pthread_cond_signal(condition) }
        if startThread { startWorker() }
    }

    private func startWorker() {
        let context = Unmanaged.passRetained(self).toOpaque()
        #if canImport(Darwin)
        var thread: pthread_t?
        #else
        var thread = pthread_t()
        #endif
        let error = pthread_create(
            &thread,
            nil,
            { context in
                #if canImport(Darwin)
                let pool = Unmanaged<BlockingIOPool>.fromOpaque(context).takeRetainedValue()
                #else
                let pool = Unmanaged<BlockingIOPool>.fromOpaque(context!).takeRetainedValue()
                #endif
                pool.work()
                return nil
            },
            context
        )
        precondition(error == 0, "pthread_create failed with error \(error)")
        #if canImport(Darwin)
        if let thread { pthread_detach(thread) }
        #else
        pthread_detach(thread)
        #endif
    }

    /// A worker's loop: take a job, run it without the lock, look briefly for another, sleep.
    private func work() {
        pthread_setspecific(poolThreadKey, UnsafeRawPointer(bitPattern: 1))
        while true {
            pthread_mutex_lock(mutex)
            var job = takeJob()
            if job == nil {
                // Look again for a short while before sleeping, yielding the core to anyone who
                // wants it, and reading only the atomic count until a job shows up.
                spinningThreads += 1
                pthread_mutex_unlock(mutex)
                let deadline = monotonicNanoseconds() + Self.spinNanoseconds
                while pending.load(ordering: .relaxed) == 0, monotonicNanoseconds() < deadline {
                    sched_yield()
                }
                pthread_mutex_lock(mutex)
                spinningThreads -= 1
                job = takeJob()
                while job == nil {
                    idleThreads += 1
                    pthread_cond_wait(condition, mutex)
                    idleThreads -= 1
                    job = takeJob()
                }
            }
            pthread_mutex_unlock(mutex)
            job?()
        }
    }

    /// Takes the oldest job; the lock must be held.
    private func takeJob() -> Job? {
        guard head < queue.count else { return nil }
        let job = queue[head]
        head += 1
        pending.subtract(1, ordering: .relaxed)
        if head == queue.count {
            queue.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64, head * 2 >= queue.count {
            queue.removeFirst(head)
            head = 0
        }
        return job
    }

    /// How long a thread that ran out of jobs keeps looking before it sleeps.
    private static let spinNanoseconds: UInt64 = 50_000
}

/// Marks the pool's own threads.
private let poolThreadKey: pthread_key_t = {
    var key = pthread_key_t()
    pthread_key_create(&key, nil)
    return key
}()

private func monotonicNanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}
