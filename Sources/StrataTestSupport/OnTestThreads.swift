package import Testing

/// Runs each test of a suite (or one test) with the tests' own threads as its preferred
/// executor, so that a synchronous test's file or database work, or an async test's long loops,
/// never hold one of the cooperative pool's threads (two on a 2-core machine) that every timer
/// and continuation of the other tests in a parallel run needs.
///
/// Child tasks (`async let`, task groups) inherit the preference; unstructured tasks and the
/// library's own work (its I/O threads, its timers) do not, so what a test checks about the
/// library is unchanged. Not for tests that check on which executor an async method answers.
package struct OnTestThreads: SuiteTrait, TestTrait, TestScoping {
    package var isRecursive: Bool { true }

    package func provideScope(
        for test: Test,
        testCase: Test.Case?,
        performing function: @concurrent @Sendable () async throws -> Void
    ) async throws {
        // A suite's own scope would wrap no test body: only test cases need the threads.
        guard testCase != nil else { return try await function() }
        try await TestThreads.withPreference(operation: function)
    }
}

extension Trait where Self == OnTestThreads {
    /// Runs the test, or every test of the suite, on the tests' own threads.
    package static var onTestThreads: Self { OnTestThreads() }
}
