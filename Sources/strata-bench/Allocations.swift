import Foundation
import MallocInterposerSwift

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Counts heap allocations with ordo-one's malloc interposer.
///
/// The interposer only counts when its library replaces `malloc` in this process. On Linux the
/// executable links `libMallocInterposerSwift.so` ahead of libc, which is enough; where it is not,
/// ``prepare()`` re-executes the bench with the library preloaded (`LD_PRELOAD`, or
/// `DYLD_INSERT_LIBRARIES` on Apple platforms). Either way a loop that allocates one object per
/// operation must read as at least one allocation per operation before any figure is trusted.
enum AllocationCounter {
    /// Set in the environment of the re-executed bench, so that it never re-executes again.
    static let preloadedVariable = "STRATA_BENCH_INTERPOSER_PRELOADED"

    #if canImport(Darwin)
    private static let preloadVariable = "DYLD_INSERT_LIBRARIES"
    private static let libraryName = "libMallocInterposerSwift.dylib"
    #else
    private static let preloadVariable = "LD_PRELOAD"
    private static let libraryName = "libMallocInterposerSwift.so"
    #endif

    /// Allocations per operation of a loop that allocates one object per operation, or `nil`
    /// before ``prepare()`` runs.
    nonisolated(unsafe) private(set) static var calibration: Double?

    /// Returns whether allocations can be counted, re-executing the bench with the interposer
    /// preloaded (this call then does not return) when they cannot be yet.
    static func prepare() -> Bool {
        let perOperation = allocatingLoopAllocationsPerOperation()
        calibration = perOperation
        if perOperation >= 1 {
            return true
        }
        if getenv(preloadedVariable) == nil {
            reexecuteWithInterposer()
        }
        return false
    }

    /// Runs `round` once with counting on and returns the allocations per operation.
    static func allocationsPerOperation(
        operations: Int,
        _ round: Workloads.Round
    ) async throws -> Double {
        MallocInterposerSwift.reset()
        MallocInterposerSwift.hook()
        do {
            try await round()
        } catch {
            MallocInterposerSwift.unhook()
            throw error
        }
        MallocInterposerSwift.unhook()
        return Double(MallocInterposerSwift.getStatistics().mallocCount) / Double(operations)
    }

    private static func allocatingLoopAllocationsPerOperation() -> Double {
        let operations = 10_000
        MallocInterposerSwift.reset()
        MallocInterposerSwift.hook()
        for index in 0..<operations {
            allocationSink = AllocationProbe(index)
        }
        MallocInterposerSwift.unhook()
        allocationSink = nil
        return Double(MallocInterposerSwift.getStatistics().mallocCount) / Double(operations)
    }

    private static func reexecuteWithInterposer() {
        guard let executable = Bundle.main.executableURL else { return }
        let library = executable.deletingLastPathComponent().appendingPathComponent(libraryName).path
        guard FileManager.default.fileExists(atPath: library) else { return }
        var preload = library
        if let existing = getenv(preloadVariable).map({ String(cString: $0) }), !existing.isEmpty {
            preload += ":" + existing
        }
        setenv(preloadVariable, preload, 1)
        setenv(preloadedVariable, "1", 1)
        fflush(nil)
        execv(executable.path, CommandLine.unsafeArgv)
        // Only reached when exec failed; the bench goes on without allocation counts.
        unsetenv(preloadedVariable)
    }
}

/// A heap object for the allocating loop that checks the counter.
private final class AllocationProbe {
    let value: Int

    init(_ value: Int) {
        self.value = value
    }
}

// Safe: only the allocating loop in `AllocationCounter`, run once before any benchmark, writes it.
// A global keeps every probe escaping, so the optimizer cannot put it on the stack.
nonisolated(unsafe) private var allocationSink: AllocationProbe?
