import Foundation
import StrataTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The children the tests start keep nothing of the test process, and a writer left behind by a
/// test run that died does not outlive it: either would keep a test run from ending.
@Suite(.onTestThreads) struct ChildProcessTests {
    @Test func aChildInheritsNoDescriptorButItsThreeStreams() async throws {
        // A pipe made without close-on-exec, as a library's sockets and pipes can be.
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)
        defer { for end in ends { close(end) } }

        let result = await Shell.run([
            "/bin/sh", "-c", "for f in /proc/self/fd/* /dev/fd/*; do echo \"${f##*/}\"; done",
        ])

        #expect(result.status == 0, "\(result.errors)")
        let descriptors = Set(result.output.split(separator: "\n").compactMap { Int32($0) })
        #expect(descriptors.isSuperset(of: [0, 1, 2]), "\(descriptors)")
        #expect(!descriptors.contains(ends[0]) && !descriptors.contains(ends[1]), "inherited: \(descriptors)")
    }

    @Test func linesAndInputGoThroughPipesAndTheExitIsReported() async throws {
        let child = try ChildProcess(
            ["/bin/sh", "-c", "while read line; do echo \"got $line\"; done; exit 3"],
            standardInput: .pipe,
            standardOutput: .pipe
        )
        var lines = child.lines.makeAsyncIterator()
        child.send("one")
        #expect(await lines.next() == "got one")
        child.send("two")
        #expect(await lines.next() == "got two")
        child.closeInput()

        #expect(await child.waitForExit() == .exited(3))
        #expect(await lines.next() == nil)
        #expect(!child.isRunning)
    }

    @Test func aKilledChildReportsItsSignal() async throws {
        let child = try ChildProcess(["/bin/sleep", "60"])
        child.signal(SIGKILL)
        let termination = await child.waitForExit()
        #expect(termination == .signaled(SIGKILL))
        #expect(termination.status == 128 + SIGKILL)
    }

    @Test func aProgramThatIsNotThereIsAnErrorNotACrash() {
        #expect(throws: ChildProcessError.self) {
            try ChildProcess(["/nonexistent/strata-\(UUID().uuidString)"])
        }
    }

    #if os(Linux)
    /// A writer whose parent dies (here, a shell that started it in the background and exited
    /// two seconds later) stops on its own instead of writing forever.
    @Test func anOrphanedWriterStops() async throws {
        let executable = try #require(StrataExecutable.url(), "the strata executable is not built next to the tests")
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let started = await Shell.run([
            "/bin/sh", "-c",
            "'\(executable.path)' debug-writer --folder '\(folder.path)' --iterations 0 >/dev/null 2>&1 & echo $!; sleep 2",
        ])
        let pid = try #require(Int32(started.output.trimmingCharacters(in: .whitespacesAndNewlines)))

        let deadline = ContinuousClock.now + .seconds(30)
        while Self.isAlive(pid), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }

        let alive = Self.isAlive(pid)
        if alive { kill(pid, SIGKILL) }
        #expect(!alive, "the orphaned writer \(pid) was still running after 30 seconds")
    }

    /// Whether `pid` runs: it exists and is not a zombie waiting to be reaped.
    private static func isAlive(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return false }
        let state = stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).first
        return state != "Z" && state != "X"
    }
    #endif
}
