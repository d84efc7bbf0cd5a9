#if canImport(Darwin)
import Darwin
import Dispatch
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The platform's memory-pressure signal, behind one small interface: Darwin's dispatch
/// memory-pressure source, or Linux's pressure-stall (PSI) triggers on the memory pressure file
/// of the process's cgroup (or of the whole system). `MemoryPressureSource.system` starts one
/// and hands its events to the memory storages.
///
/// Each branch starts watching in ``start(deliver:)`` and calls `deliver` from a thread of its
/// own (a dispatch queue, or a ``POSIXThread`` blocked in `poll(2)`), never from the
/// cooperative pool.
package final class MemoryPressureMonitor: Sendable {
    /// How hard the system is pressed.
    package enum Level: Sendable, Hashable {
        case warning
        case critical
    }

    /// Why the platform gives no signal: a sentence for the log, naming the file and the error.
    package struct Refusal: Error, Sendable, CustomStringConvertible {
        package var description: String
    }

    /// What this monitor watches, in words: the file and its triggers, or the dispatch source.
    package let description: String
    private let stopWatching: @Sendable () -> Void
    private let stopped = LockedState(false)

    private init(description: String, stop: @escaping @Sendable () -> Void) {
        self.description = description
        self.stopWatching = stop
    }

    /// Stops watching and releases what the monitor holds; `deliver` is not called after it
    /// returns. Calling it again does nothing.
    package func stop() {
        let first = stopped.withLock { stopped in
            defer { stopped = true }
            return !stopped
        }
        if first { stopWatching() }
    }

    deinit {
        stop()
    }

    /// Starts watching the platform's signal.
    ///
    /// - Throws: ``Refusal`` when the platform has no signal, or refuses this process one (a
    ///   kernel without PSI, a pressure file the process may not write, a window the kernel does
    ///   not allow).
    package static func start(
        deliver: @escaping @Sendable (Level) -> Void
    ) throws(Refusal) -> MemoryPressureMonitor {
        #if canImport(Darwin)
        return startDispatchSource(deliver: deliver)
        #elseif os(Linux) || os(Android)
        return try start(pressureFile: linuxPressureFile(), deliver: deliver)
        #else
        throw Refusal(description: "this platform has no memory-pressure signal Strata can watch")
        #endif
    }

    // MARK: Darwin

    #if canImport(Darwin)
    /// The source and its queue, kept together; `DispatchSourceMemoryPressure` is used only
    /// through its own thread-safe calls (`cancel`, `data` on its queue).
    private final class DispatchSourceBox: @unchecked Sendable {
        let source: any DispatchSourceMemoryPressure

        init(_ source: any DispatchSourceMemoryPressure) {
            self.source = source
        }
    }

    /// `DispatchSource.makeMemoryPressureSource(eventMask:queue:)` for warnings and critical
    /// events; the handler reads the event from the source's `data` on the source's own queue.
    private static func startDispatchSource(deliver: @escaping @Sendable (Level) -> Void) -> MemoryPressureMonitor {
        let queue = DispatchQueue(label: "Strata.memory-pressure")
        let box = DispatchSourceBox(
            DispatchSource.makeMemoryPressureSource(eventMask: [.warning, .critical], queue: queue)
        )
        box.source.setEventHandler { [weak box] in
            guard let event = box?.source.data else { return }
            if event.contains(.critical) {
                deliver(.critical)
            } else if event.contains(.warning) {
                deliver(.warning)
            }
        }
        box.source.activate()
        return MemoryPressureMonitor(description: "the dispatch memory-pressure source (warning, critical)") {
            box.source.cancel()
        }
    }
    #endif

    // MARK: Linux

    #if os(Linux) || os(Android)
    /// The window of both triggers. The kernel lets a process without `CAP_SYS_RESOURCE` arm a
    /// trigger only with a window that is a whole multiple of 2 seconds (Linux 6.5 and later),
    /// so 2 s is the shortest one every process may use.
    package static let triggerWindow: Duration = .seconds(2)
    /// A warning: some task stalled on memory for this long within one window (10%): reclaim is
    /// slowing the system down.
    package static let warningStall: Duration = .milliseconds(200)
    /// Critical: every runnable task stalled on memory at once for this long within one window
    /// (10%): the system does nothing but reclaim.
    package static let criticalStall: Duration = .milliseconds(200)

    /// The memory pressure file that measures this process: its cgroup's `memory.pressure`
    /// (cgroup v2, as a container's limit applies to it), or the whole system's
    /// `/proc/pressure/memory` when the process sits in the root cgroup or cgroup v2 is not
    /// mounted.
    package static func linuxPressureFile() -> String {
        let systemFile = "/proc/pressure/memory"
        guard let line = readProcFile("/proc/self/cgroup")?.split(separator: "\n").first(where: { $0.hasPrefix("0::") })
        else { return systemFile }
        let path = line.dropFirst(3)
        guard path != "/" else { return systemFile }
        for mount in ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"] {
            let candidate = mount + path + "/memory.pressure"
            if access(candidate, W_OK) == 0 { return candidate }
        }
        return systemFile
    }

    /// Arms a warning trigger (`some`) and a critical trigger (`full`) on `pressureFile` and
    /// starts a thread that waits in `poll(2)` for either to fire. The kernel fires a trigger at
    /// most once per window.
    ///
    /// - Parameter warningStall: The stall that makes a warning; tests give one the kernel
    ///   refuses.
    package static func start(
        pressureFile: String,
        warningStall: Duration = warningStall,
        deliver: @escaping @Sendable (Level) -> Void
    ) throws(Refusal) -> MemoryPressureMonitor {
        let warningTrigger = trigger("some", stall: warningStall)
        let criticalTrigger = trigger("full", stall: criticalStall)
        let warning = try arm(pressureFile, trigger: warningTrigger)
        let critical: Int32
        do {
            critical = try arm(pressureFile, trigger: criticalTrigger)
        } catch {
            close(warning)
            throw error
        }
        var wake: [Int32] = [-1, -1]
        guard pipe(&wake) == 0 else {
            let reason = Refusal(description: "cannot make a pipe to stop the watcher: \(errorText(errno))")
            close(warning)
            close(critical)
            throw reason
        }
        let (readEnd, writeEnd) = (wake[0], wake[1])
        guard let thread = POSIXThread.start({ watch(warning: warning, critical: critical, wake: readEnd, deliver) })
        else {
            for descriptor in [warning, critical, readEnd, writeEnd] { close(descriptor) }
            throw Refusal(description: "cannot start the thread that waits for \(pressureFile)")
        }
        let threadBox = ThreadBox(thread)
        let description = "\(pressureFile) (warning: \"\(warningTrigger)\", critical: \"\(criticalTrigger)\")"
        return MemoryPressureMonitor(description: description) {
            var byte: UInt8 = 1
            _ = write(writeEnd, &byte, 1)
            pthread_join(threadBox.thread, nil)
            close(writeEnd)
        }
    }

    /// A `pthread_t`, joined once by ``stop()``.
    private final class ThreadBox: @unchecked Sendable {
        let thread: pthread_t

        init(_ thread: pthread_t) {
            self.thread = thread
        }
    }

    /// A trigger as the kernel reads it: `"<some|full> <stall µs> <window µs>"`.
    private static func trigger(_ kind: String, stall: Duration) -> String {
        "\(kind) \(microseconds(stall)) \(microseconds(triggerWindow))"
    }

    /// Opens `file` for writing and writes one trigger; the descriptor then signals `POLLPRI`
    /// each time the trigger fires.
    private static func arm(_ file: String, trigger: String) throws(Refusal) -> Int32 {
        let descriptor = open(file, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw Refusal(description: "cannot open \(file) to arm a trigger: \(errorText(errno))")
        }
        let written = trigger.withCString { write(descriptor, $0, strlen($0) + 1) }
        guard written >= 0 else {
            let reason = Refusal(
                description: "the kernel refused the trigger \"\(trigger)\" on \(file): \(errorText(errno))"
            )
            close(descriptor)
            throw reason
        }
        return descriptor
    }

    /// The text of a small file of `/proc`, whose size `stat` reports as 0: read until the end.
    private static func readProcFile(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4_096)
        while bytes.count < 65_536 {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += chunk[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func microseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000
    }

    /// The watcher thread: waits for a trigger or the stop byte, then closes what it read from.
    private static func watch(warning: Int32, critical: Int32, wake: Int32, _ deliver: (Level) -> Void) {
        defer { for descriptor in [warning, critical, wake] { close(descriptor) } }
        let priority = Int16(POLLPRI)
        var descriptors = [
            pollfd(fd: warning, events: priority, revents: 0),
            pollfd(fd: critical, events: priority, revents: 0),
            pollfd(fd: wake, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            let ready = poll(&descriptors, nfds_t(descriptors.count), -1)
            if ready < 0 {
                if errno == EINTR { continue }
                return
            }
            if descriptors[2].revents != 0 { return }
            // POLLERR: the pressure file went away (its cgroup was removed); nothing more comes.
            let failed = Int16(POLLERR | POLLNVAL)
            if descriptors[0].revents & failed != 0 || descriptors[1].revents & failed != 0 { return }
            if descriptors[1].revents & priority != 0 {
                deliver(.critical)
            } else if descriptors[0].revents & priority != 0 {
                deliver(.warning)
            }
        }
    }

    private static func errorText(_ code: Int32) -> String {
        "\(String(cString: strerror(code))) (errno \(code))"
    }
    #endif
}
