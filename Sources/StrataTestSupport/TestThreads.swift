import Strata

/// Threads of the tests' own for their long synchronous work: stress loops over the synchronous
/// API, checks that read thousands of files, waits for child processes.
///
/// A test that ran such work in its own task would hold one of the cooperative pool's threads
/// (two on a 2-core machine) for seconds, and every timer in the process (every time limit under
/// test) would fire late. These threads are not Strata's I/O threads either, so a test's long
/// work never delays the library's own async I/O that another test awaits. Any task may use it.
package enum TestThreads {
    private static let pool = BlockingIOPool(maximumThreadCount: 6)

    /// Runs `body` on one of the tests' threads; the calling task suspends meanwhile.
    package static func run<Result: Sendable, Failure: Error>(
        _ body: @Sendable () throws(Failure) -> Result
    ) async throws(Failure) -> Result {
        try await pool.run(body)
    }
}
