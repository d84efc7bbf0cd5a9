package import Foundation
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

/// A child process the tests start, with nothing of the test process but what it is given.
///
/// Spawned with `posix_spawn`, and every descriptor above standard error is closed in the child:
/// a child never inherits another test's pipes or sockets (a local HTTP server's connections, the
/// write end of a pipe another test waits on), so it can neither keep them open past their owner's
/// close nor be the reason a read never reaches its end. Pipes to the child are made close-on-exec
/// in this process. Foundation's `Process` is not used: on Linux it spawns through a socket pair
/// and a run-loop thread of its own, and its waits were seen to miss a child's exit.
///
/// The child is reaped by a thread of its own, so waiting for it never holds a cooperative-pool
/// thread. Standard output, when piped, is read by another thread, which owns and closes the
/// descriptor at the end of the output. Any task may use it.
package final class ChildProcess: Sendable {
    /// Where one of the child's standard streams goes.
    package enum Stream: Sendable {
        /// The test process's own stream.
        case inherit
        /// `/dev/null`.
        case null
        /// A file: read from for standard input; created or truncated for output.
        case file(String)
        /// A pipe to this process: ``send(_:)`` writes to its input; ``lines`` reads its output.
        case pipe
    }

    /// How a child ended.
    package enum Termination: Equatable, Sendable, CustomStringConvertible {
        case exited(Int32)
        case signaled(Int32)

        /// The status a shell reports: the exit code, or 128 plus the signal.
        package var status: Int32 {
            switch self {
            case .exited(let code): code
            case .signaled(let signal): 128 + signal
            }
        }

        package var description: String {
            switch self {
            case .exited(let code): "exited with \(code)"
            case .signaled(let signal): "killed by signal \(signal)"
            }
        }
    }

    /// The child's process identifier.
    package let pid: pid_t
    /// The lines the child prints on standard output, when it is piped; empty otherwise.
    package let lines: AsyncStream<String>
    private let input: LockedState<Int32>
    private let exit = ExitState()

    /// Starts `arguments[0]` (a path) with the rest as its arguments and this process's
    /// environment.
    package init(
        _ arguments: [String],
        standardInput: Stream = .null,
        standardOutput: Stream = .inherit,
        standardError: Stream = .inherit
    ) throws(ChildProcessError) {
        guard let path = arguments.first else { throw ChildProcessError(description: "no program to run") }
        // Darwin declares the file actions and attributes as `void *` typedefs, imported as
        // optional raw pointers that `_init` allocates; glibc and musl as structs.
        #if canImport(Darwin)
        var actions: posix_spawn_file_actions_t? = nil
        #else
        var actions = posix_spawn_file_actions_t()
        #endif
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var parentEnds: [Int32] = []
        var childEnds: [Int32] = []
        defer { for descriptor in childEnds { close(descriptor) } }
        var inputEnd: Int32 = -1
        var outputEnd: Int32 = -1

        func pipeEnds() throws(ChildProcessError) -> (read: Int32, write: Int32) {
            var ends: [Int32] = [-1, -1]
            if let makePipe = Self.pipe2 {
                guard makePipe(&ends, O_CLOEXEC) == 0 else { throw ChildProcessError(call: "pipe2") }
            } else {
                guard pipe(&ends) == 0 else { throw ChildProcessError(call: "pipe") }
                for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
            }
            return (ends[0], ends[1])
        }

        for (target, stream) in [
            (STDIN_FILENO, standardInput), (STDOUT_FILENO, standardOutput), (STDERR_FILENO, standardError),
        ] {
            switch stream {
            case .inherit:
                #if canImport(Darwin)
                posix_spawn_file_actions_addinherit_np(&actions, target)
                #endif
            case .null:
                posix_spawn_file_actions_addopen(
                    &actions,
                    target,
                    "/dev/null",
                    target == STDIN_FILENO ? O_RDONLY : O_WRONLY,
                    0
                )
            case .file(let file):
                let flags = target == STDIN_FILENO ? O_RDONLY : O_WRONLY | O_CREAT | O_TRUNC
                posix_spawn_file_actions_addopen(&actions, target, file, flags, 0o600)
            case .pipe:
                let ends = try pipeEnds()
                let (mine, theirs) = target == STDIN_FILENO ? (ends.write, ends.read) : (ends.read, ends.write)
                parentEnds.append(mine)
                childEnds.append(theirs)
                if target == STDIN_FILENO { inputEnd = mine } else if target == STDOUT_FILENO { outputEnd = mine }
                // dup2 clears close-on-exec on the copy the child keeps.
                posix_spawn_file_actions_adddup2(&actions, theirs, target)
            }
        }
        #if canImport(Darwin)
        var attributes: posix_spawnattr_t? = nil
        #else
        var attributes = posix_spawnattr_t()
        #endif
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        #if canImport(Darwin)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_CLOEXEC_DEFAULT))
        #else
        if let closeFrom = Self.closeFrom {
            _ = closeFrom(&actions, 3)
        } else {
            // Before glibc 2.34: close, in the child, every descriptor open now.
            let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
            for descriptor in open.compactMap(Int32.init) where descriptor > 2 && !childEnds.contains(descriptor) {
                posix_spawn_file_actions_addclose(&actions, descriptor)
            }
        }
        #endif

        var child: pid_t = 0
        let arguments = arguments.map { strdup($0) } + [nil]
        defer { for argument in arguments { free(argument) } }
        // This process's environment, built from Foundation's copy: Darwin's headers do not
        // declare `environ` to Swift (only `_NSGetEnviron()`), glibc's and musl's do.
        let environment = ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for variable in environment { free(variable) } }
        let result = posix_spawn(&child, path, &actions, &attributes, arguments, environment)
        guard result == 0 else {
            for descriptor in parentEnds { close(descriptor) }
            throw ChildProcessError(description: "cannot start \(path): \(String(cString: strerror(result)))")
        }
        pid = child
        input = LockedState(inputEnd)

        let (lines, continuation) = AsyncStream<String>.makeStream()
        self.lines = lines
        if outputEnd >= 0 {
            let descriptor = outputEnd
            Self.start("strata-child-output") { Self.readLines(descriptor, into: continuation) }
        } else {
            continuation.finish()
        }
        let exit = exit
        let spawned = child
        Self.start("strata-child-reaper") {
            var status: Int32 = 0
            while waitpid(spawned, &status, 0) < 0, errno == EINTR {}
            exit.end(status & 0x7f == 0 ? .exited((status >> 8) & 0xff) : .signaled(status & 0x7f))
        }
    }

    deinit {
        input.withLock { descriptor in
            if descriptor >= 0 { close(descriptor) }
        }
    }

    /// Whether the child has not been reaped yet.
    package var isRunning: Bool { exit.termination == nil }

    /// Sends `signal` to the child.
    package func signal(_ signal: Int32) {
        if isRunning { kill(pid, signal) }
    }

    /// Writes `line` and a newline to the child's standard input, when it is piped and open.
    package func send(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        input.withLock { descriptor in
            guard descriptor >= 0 else { return }
            var written = 0
            while written < bytes.count {
                let count = bytes[written...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR { continue }
                if count <= 0 { return }
                written += count
            }
        }
    }

    /// Closes the child's standard input, so it reads its end.
    package func closeInput() {
        input.withLock { descriptor in
            if descriptor >= 0 { close(descriptor) }
            descriptor = -1
        }
    }

    /// Waits until the child ends; returns how.
    package func waitForExit() async -> Termination {
        await exit.wait()
    }

    // Declared by glibc only for _GNU_SOURCE, which Swift's Glibc module does not define.
    private typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32
    private typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private static let pipe2: Pipe2? = symbol("pipe2")
    private static let closeFrom: CloseFrom? = symbol("posix_spawn_file_actions_addclosefrom_np")

    private static func symbol<Function>(_ name: String) -> Function? {
        #if canImport(Darwin)
        return nil
        #else
        guard let address = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }
        return unsafeBitCast(address, to: Function.self)
        #endif
    }

    private static func start(_ name: String, _ body: @escaping @Sendable () -> Void) {
        let thread = Thread(block: body)
        thread.name = name
        thread.start()
    }

    private static func readLines(_ descriptor: Int32, into continuation: AsyncStream<String>.Continuation) {
        defer {
            close(descriptor)
            continuation.finish()
        }
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            if count <= 0 { break }
            pending += buffer[0..<count]
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                continuation.yield(String(decoding: pending[..<newline], as: UTF8.self))
                pending.removeSubrange(...newline)
            }
        }
        if !pending.isEmpty { continuation.yield(String(decoding: pending, as: UTF8.self)) }
    }
}

/// How a child ended, once it has, and who waits for it.
private final class ExitState: Sendable {
    private let state = LockedState<
        (termination: ChildProcess.Termination?, waiters: [CheckedContinuation<ChildProcess.Termination, Never>])
    >(
        (nil, [])
    )

    var termination: ChildProcess.Termination? { state.withLock { $0.termination } }

    func end(_ termination: ChildProcess.Termination) {
        let waiters = state.withLock { state in
            state.termination = termination
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: termination) }
    }

    func wait() async -> ChildProcess.Termination {
        await withCheckedContinuation { continuation in
            let ended = state.withLock { state -> ChildProcess.Termination? in
                if let termination = state.termination { return termination }
                state.waiters.append(continuation)
                return nil
            }
            if let ended { continuation.resume(returning: ended) }
        }
    }
}

/// A child process that could not be started.
package struct ChildProcessError: Error, CustomStringConvertible {
    package var description: String

    init(description: String) {
        self.description = description
    }

    init(call: String) {
        description = "\(call) failed: \(String(cString: strerror(errno)))"
    }
}
