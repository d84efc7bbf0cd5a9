package import Foundation
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
/// The pool is a `TaskExecutor` (SE-0417): ``run(_:)`` moves the calling task onto one of the
/// pool's threads for the synchronous body and back to the caller's executor after it, so there
/// is no continuation to resume from a foreign thread and every hop goes through the runtime's
/// own enqueue (which ThreadSanitizer understands; a continuation resumed before its task has
/// suspended is a path it does not). The threads follow swift-nio's `NIOThreadPool`: a queue
/// behind a lock and a condition, and threads that take jobs from it. Threads start on demand, up
/// to ``maximumThreadCount``, and stay for the life of the process. A thread that finished a job
/// keeps looking for the next one for a few microseconds before it sleeps: back-to-back requests
/// (a loop of awaited reads) then pay no wake-up. A job that blocks (SQLite's busy timeout, a slow
/// disk) holds one of these threads, never one of the cooperative pool's, so timers and other
/// tasks keep running.
///
/// Any task or thread may use it.
package final class BlockingIOPool: TaskExecutor, @unchecked Sendable {
    // Safe: `queue`, `head`, `idleThreads`, `threadCount` and `spinningThreads` are only touched
    // with `mutex` held; the condition is only waited on with it held.

    /// The pool every storage in the process shares.
    ///
    /// As many threads as cores, and at least two, as `NIOThreadPool.singleton` has: the pool
    /// also decodes and runs queries, work that only competes with everything else for the
    /// cores if it gets more threads than there are cores.
    package static let shared = BlockingIOPool(
        name: "strata-io",
        maximumThreadCount: max(2, ProcessInfo.processInfo.activeProcessorCount)
    )

    /// The most threads the pool starts.
    package let maximumThreadCount: Int
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    private var queue: [UnownedJob] = []
    private var head = 0
    private var threadCount = 0
    private var idleThreads = 0
    private var spinningThreads = 0
    /// Jobs queued and not yet taken, for spinning threads to watch without the lock.
    private let pending = Atomic<Int>(0)

    /// How much the pool's threads yield to others for processor time: 0, the default, not at
    /// all; up to 19, more and more (a POSIX nice value, applied to each thread).
    package let niceness: Int32

    /// The name each of the pool's threads carries (at most 15 bytes, Linux's limit), as seen in
    /// a debugger, `top -H` or a profile.
    package let name: String

    package init(name: String, maximumThreadCount: Int, niceness: Int32 = 0) {
        precondition(maximumThreadCount > 0, "a pool needs at least one thread")
        precondition((0...19).contains(niceness), "a niceness runs from 0 to 19")
        precondition(name.utf8.count <= 15, "a thread's name holds at most 15 bytes")
        self.name = name
        self.maximumThreadCount = maximumThreadCount
        self.niceness = niceness
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

    /// Runs `body` on one of the pool's threads and returns its result on the caller's executor;
    /// the caller suspends meanwhile, holding no thread.
    ///
    /// A caller on an actor (the main actor, say) resumes on that actor. A caller on no actor
    /// resumes on the global concurrent executor, never on a pool thread, so the caller's own
    /// work after the call does not occupy a thread meant for blocking I/O.
    ///
    /// The body runs to completion once it has started: cancelling the calling task does not stop
    /// a system call under way.
    @inlinable
    package func run<Result: Sendable, Failure: Error>(
        _ body: @Sendable () throws(Failure) -> Result
    ) async throws(Failure) -> Result {
        let outcome = await withTaskExecutorPreference(self) { await Self.execute(body) }
        // Bound first: `if #isolation == nil` crashes Swift 6.3.1's code generation.
        let isolation = #isolation
        if isolation == nil {
            // Nonisolated code keeps running on whatever thread it resumed on; without this hop
            // the caller would go on on a pool thread until its next suspension.
            await Self.leavePool()
        }
        return try outcome.get()
    }

    /// Runs `body` over `0..<count` split into consecutive ranges, one per pool thread (at most),
    /// each range at least `minimumChunk` long, all at once on the pool's threads; returns the
    /// ranges' results joined in order. The first range that throws (in order) fails the call,
    /// after every range has finished.
    package func map<Element: Sendable, Failure: Error>(
        _ count: Int,
        minimumChunk: Int = 8,
        _ body: @escaping @Sendable (Range<Int>) throws(Failure) -> [Element]
    ) async throws(Failure) -> [Element] {
        let chunks = min(maximumThreadCount, max(1, count / max(minimumChunk, 1)))
        if chunks <= 1 {
            return try await run { () throws(Failure) in try body(0..<count) }
        }
        let size = (count + chunks - 1) / chunks
        let parts = await withTaskGroup(of: (Int, Swift.Result<[Element], Failure>).self) { group in
            for chunk in 0..<chunks {
                let range = chunk * size..<min(count, (chunk + 1) * size)
                guard !range.isEmpty else { continue }
                group.addTask(executorPreference: self) {
                    (chunk, Swift.Result { () throws(Failure) in try body(range) })
                }
            }
            var parts = [Swift.Result<[Element], Failure>](repeating: .success([]), count: chunks)
            for await (chunk, part) in group { parts[chunk] = part }
            return parts
        }
        var joined: [Element] = []
        joined.reserveCapacity(count)
        for part in parts { joined += try part.get() }
        return joined
    }

    /// The optimistic update of the storages whose files or rows change under other writers:
    /// `read` on the pool, `body` on the caller's executor with nothing held, then `commit` on
    /// the pool, which writes only if what `read` saw is still there and returns whether it
    /// wrote; if not, all three run again on the newer value. A `body` that throws ends it with
    /// `aborted(error)`, nothing written.
    package func update<Read: Sendable, Result, Failure: Error>(
        read: @Sendable () throws(Failure) -> Read,
        value: (Read) -> Data?,
        commit: @Sendable (Read, Data?) throws(Failure) -> Bool,
        aborted: (any Error) -> Failure,
        _ body: (inout Data?) throws -> Result
    ) async throws(Failure) -> Result {
        while true {
            let current = try await run(read)
            var changed = value(current)
            let result: Result
            do {
                result = try body(&changed)
            } catch {
                throw aborted(error)
            }
            let proposed = changed
            if try await run({ () throws(Failure) in try commit(current, proposed) }) { return result }
        }
    }

    /// Runs `body` where the task's executor preference says: on the pool, inside ``run(_:)``.
    @concurrent
    @usableFromInline
    static func execute<Result: Sendable, Failure: Error>(
        _ body: @Sendable () throws(Failure) -> Result
    ) async -> Swift.Result<Result, Failure> {
        Swift.Result { () throws(Failure) -> Result in try body() }
    }

    /// Hops to the global concurrent executor (the task has no executor preference any more).
    @concurrent
    @usableFromInline
    static func leavePool() async {}

    /// Queues a task's job to run on one of the pool's threads.
    package func enqueue(_ job: consuming ExecutorJob) {
        submit(UnownedJob(job))
    }

    /// Whether the calling thread is one of the shared pool's threads (Strata's I/O threads).
    package static var isPoolThread: Bool {
        let owner: UnsafeMutableRawPointer? = pthread_getspecific(poolThreadKey)
        return owner == Unmanaged.passUnretained(shared).toOpaque()
    }

    private func submit(_ job: UnownedJob) {
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
        let thread = POSIXThread.start { [self] in
            // Foundation's setter reaches `pthread_setname_np`, which Glibc's module hides.
            Thread.current.name = name
            if niceness > 0 {
                #if canImport(Darwin)
                // Darwin's nice value is the process's: a lower quality of service is the
                // per-thread equivalent.
                _ = pthread_set_qos_class_self_np(QOS_CLASS_UTILITY, 0)
                #elseif canImport(Glibc)
                // Per thread on Linux: `who` 0 names the calling thread, not the process.
                _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, niceness)
                #endif
            }
            work()
        }
        guard let thread else { preconditionFailure("pthread_create failed: cannot start an I/O thread") }
        pthread_detach(thread)
    }

    /// A worker's loop: take a job, run it without the lock, look briefly for another, sleep.
    private func work() {
        pthread_setspecific(poolThreadKey, UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque()))
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
            job?.runSynchronously(on: asUnownedTaskExecutor())
        }
    }

    /// Takes the oldest job; the lock must be held.
    private func takeJob() -> UnownedJob? {
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

/// Marks each pool's threads with the pool they belong to.
private let poolThreadKey: pthread_key_t = {
    var key = pthread_key_t()
    pthread_key_create(&key, nil)
    return key
}()

/// Nanoseconds on the monotonic clock.
package func monotonicNanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}
