import Foundation
import Strata
import Synchronization
import _StrataInternals

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A line on standard error that says what a long command is doing while it does it, when standard
/// error is a terminal: the step, how many items so far (when the step counts them) and the time
/// taken, redrawn five times a second and erased when the step ends. Piped or redirected output
/// gets nothing, so scripts read only the command's results.
final class Progress: Sendable {
    private let step: String
    private let count = Atomic(0)
    private let state = LockedState<
        (running: Bool, started: ContinuousClock.Instant, stopped: CheckedContinuation<Void, Never>?)
    >(
        (true, .now, nil)
    )

    /// Whether progress is shown: standard error is a terminal.
    static var isShown: Bool { isatty(STDERR_FILENO) == 1 }

    /// Runs `body` with a progress line for `step` (say "verifying /path"); `body` may report how
    /// many items it has done.
    static func run<Result>(_ step: String, _ body: (Progress) async throws -> Result) async rethrows -> Result {
        let progress = Progress(step: step)
        guard isShown else { return try await body(progress) }
        let thread = Thread { progress.draw() }
        thread.name = "strata-progress"
        thread.start()
        do {
            let result = try await body(progress)
            await progress.stop()
            return result
        } catch {
            await progress.stop()
            throw error
        }
    }

    private init(step: String) {
        self.step = step
    }

    /// Records that `items` items are done.
    func report(_ items: Int) {
        count.store(items, ordering: .relaxed)
    }

    /// Draws the line now, then every 200 ms until stopped.
    private func draw() {
        while true {
            let (running, started) = state.withLock { ($0.running, $0.started) }
            let items = count.load(ordering: .relaxed)
            var line = "\r\u{1B}[K\(step)"
            if items > 0 { line += ": \(items)" }
            line += " (\((ContinuousClock.now - started).components.seconds) s)"
            FileHandle.standardError.write(Data(line.utf8))
            guard running else { break }
            usleep(200_000)
        }
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
        state.withLock { $0.stopped }?.resume()
    }

    /// Stops the drawing thread and returns once it has erased the line.
    private func stop() async {
        await withCheckedContinuation { continuation in
            state.withLock {
                $0.running = false
                $0.stopped = continuation
            }
        }
    }
}
