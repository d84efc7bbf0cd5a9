import Strata
import _StrataInternals

/// Threads of the tests' own for their long synchronous work: stress loops over the synchronous
/// API, checks that read thousands of files, waits for child processes.
///
/// A test that ran such work in its own task would hold one of the cooperative pool's threads
/// (two on a 2-core machine) for seconds, and every timer in the process (every time limit under
/// test) would fire late. These threads are not Strata's I/O threads either, so a test's long
/// work never delays the library's own async I/O that another test awaits. Any task may use it.
package enum TestThreads {
    /// Niced, so that when the tests' long work and the cooperative pool both want the two
    /// cores, the pool (every test's timers and continuations) gets them first.
    private static let pool = BlockingIOPool(name: "strata-tests", maximumThreadCount: 6, niceness: 10)

    /// Threads for tests that measure how soon something answers, never niced and never given
    /// long work.
    private static let timing = BlockingIOPool(name: "strata-timing", maximumThreadCount: 2)

    /// Runs `body` with the timing threads as its task's preferred executor: every wake-up of
    /// the calling task (a resumed continuation, an answered await) runs there, not behind the
    /// jobs queued on the cooperative pool by every other test of a parallel run. A test of a time
    /// limit then measures the limit, not how busy the pool was.
    ///
    /// The operations that Strata's deadlines race (`Deadline.operationExecutor`) run there too, so
    /// that an operation that answers at its limit is not late for the pool's queue either.
    package static func onTimingThreads<Value: Sendable, Failure: Error>(
        _ body: () async throws(Failure) -> Value
    ) async throws(Failure) -> Value {
        let outcome = await Deadline.$operationExecutor.withValue(timing) {
            await withTaskExecutorPreference(timing) { () async -> Result<Value, Failure> in
                do throws(Failure) { return .success(try await body()) } catch { return .failure(error) }
            }
        }
        return try outcome.get()
    }

    /// Runs `body` on the timing threads (see ``onTimingThreads(_:)``) and returns its result with
    /// how long it took: the form for a test that a limit reports within its length plus a second.
    package static func timed<Result: Sendable, Failure: Error>(
        _ body: () async throws(Failure) -> Result
    ) async throws(Failure) -> (result: Result, elapsed: Duration) {
        try await onTimingThreads { () async throws(Failure) -> (result: Result, elapsed: Duration) in
            let started = ContinuousClock.now
            let result = try await body()
            return (result, ContinuousClock.now - started)
        }
    }

    /// Runs `operation` with the tests' threads as its task's preferred executor (see
    /// ``OnTestThreads``).
    package static func withPreference<Result: Sendable, Failure: Error>(
        operation: () async throws(Failure) -> Result
    ) async throws(Failure) -> Result {
        try await withTaskExecutorPreference(pool, operation: operation)
    }

    /// Runs `body` on one of the tests' threads; the calling task suspends meanwhile.
    package static func run<Result: Sendable, Failure: Error>(
        _ body: @Sendable () throws(Failure) -> Result
    ) async throws(Failure) -> Result {
        try await pool.run(body)
    }
}
