import Logging
import _StrataInternals

/// How hard the system is pressed for memory.
public enum MemoryPressureLevel: Sendable, Hashable, CustomStringConvertible {
    /// Memory is getting short: give back what is cheap to rebuild. A cache keeps the share of
    /// its entries that ``MemoryPressureResponse/keptOnWarning`` says.
    case warning
    /// Memory is nearly gone, and the system may end the process next: give back everything
    /// that can be rebuilt. A cache empties itself.
    case critical

    public var description: String {
        switch self {
        case .warning: "warning"
        case .critical: "critical"
        }
    }
}

/// Where memory-pressure events come from: the platform, or your own code.
///
/// ``system`` watches the platform's signal, and every bounded ``MemoryStorage`` listens to it
/// unless told otherwise (see ``MemoryPressureResponse``):
///
/// - On Apple platforms, Dispatch's memory-pressure source, the signal behind
///   `UIApplication.didReceiveMemoryWarningNotification`: its warning and critical events.
/// - On Linux, the kernel's pressure-stall information: a trigger on the `memory.pressure` file
///   of the process's cgroup (its container's, under cgroup v2), or on `/proc/pressure/memory`.
///   A warning when some task waited for memory 200 ms out of 2 s; critical when every task
///   did. A kernel without PSI, or one that refuses this process a trigger, gives no signal: the
///   reason is logged once at `.info` and kept in ``status``.
///
/// The platform is watched from the first storage that listens for the life of the process:
/// one dispatch source, or one thread waiting in `poll(2)`. Listeners run on that thread, never on
/// the cooperative pool, and a trim takes only the storage's locks.
///
/// A source made with ``init()`` hears only ``signal(_:)``: tests use one to drive a storage, and
/// an app can forward its own events (a move to the background, say) the same way.
///
/// ```swift
/// let pressure = MemoryPressureSource()
/// let thumbnails = MemoryStorage<String, Data>(
///     maximumCost: 50_000_000,
///     memoryPressure: .trimming(keepingOnWarning: 0.25, from: pressure)
/// )
/// pressure.signal(.warning)   // thumbnails keeps a quarter of what it held
/// ```
public final class MemoryPressureSource: Sendable {
    /// What a source listens to.
    public enum Status: Sendable, Hashable, CustomStringConvertible {
        /// Only ``MemoryPressureSource/signal(_:)``: a source made with
        /// ``MemoryPressureSource/init()``.
        case manual
        /// The platform's signal, not watched yet because nothing listens.
        case idle
        /// The platform's signal, described: the file and triggers, or the dispatch source. While
        /// the first listener is still arming the platform's monitor, on its own thread, the
        /// description is "starting".
        case watching(String)
        /// The platform gives this process no signal, and why; ``MemoryPressureSource/signal(_:)``
        /// still works.
        case unavailable(String)

        public var description: String {
            switch self {
            case .manual: "manual"
            case .idle: "idle"
            case .watching(let what): "watching \(what)"
            case .unavailable(let reason): "unavailable: \(reason)"
            }
        }
    }

    /// The platform's memory-pressure signal, shared by every storage of the process.
    public static let system = MemoryPressureSource(watchingPlatform: true)

    private struct State {
        var listeners: [UInt64: @Sendable (MemoryPressureLevel) -> Void] = [:]
        var nextListener: UInt64 = 0
        var status: Status
        var monitor: MemoryPressureMonitor?
        var events: [MemoryPressureLevel: Int] = [:]
    }

    private let state: LockedState<State>
    private let watchesPlatform: Bool
    private let logger = Logger(label: "Strata.MemoryPressure")

    /// Creates a source that only ``signal(_:)`` drives.
    public convenience init() {
        self.init(watchingPlatform: false)
    }

    private init(watchingPlatform: Bool) {
        self.watchesPlatform = watchingPlatform
        self.state = LockedState(State(status: watchingPlatform ? .idle : .manual))
    }

    deinit {
        state.withLock { $0.monitor }?.stop()
    }

    /// What the source listens to now.
    public var status: Status {
        state.withLock { $0.status }
    }

    /// How many events of `level` the source has delivered so far, from the platform and from
    /// ``signal(_:)``.
    public func eventCount(_ level: MemoryPressureLevel) -> Int {
        state.withLock { $0.events[level, default: 0] }
    }

    /// How many storages listen now.
    package var listenerCount: Int {
        state.withLock { $0.listeners.count }
    }

    /// Delivers `level` to every listener now, on the calling thread, as if the platform had
    /// signalled it.
    public func signal(_ level: MemoryPressureLevel) {
        let listeners = state.withLock { state in
            state.events[level, default: 0] += 1
            return Array(state.listeners.values)
        }
        for listener in listeners { listener(level) }
    }

    /// Adds `listener` until the returned subscription is released; the first listener of
    /// ``system`` starts watching the platform.
    package func subscribe(_ listener: @escaping @Sendable (MemoryPressureLevel) -> Void) -> MemoryPressureSubscription
    {
        let (id, startsWatching) = state.withLock { state in
            defer { state.nextListener += 1 }
            state.listeners[state.nextListener] = listener
            let startsWatching = watchesPlatform && state.status == .idle
            if startsWatching { state.status = .watching("starting") }
            return (state.nextListener, startsWatching)
        }
        if startsWatching { startWatching() }
        return MemoryPressureSubscription(source: self, id: id)
    }

    func unsubscribe(_ id: UInt64) {
        let listener = state.withLock { $0.listeners.removeValue(forKey: id) }
        _ = consume listener
    }

    private func startWatching() {
        do {
            let monitor = try MemoryPressureMonitor.start { [weak self] level in
                switch level {
                case .warning: self?.signal(.warning)
                case .critical: self?.signal(.critical)
                }
            }
            state.withLock { state in
                state.monitor = monitor
                state.status = .watching(monitor.description)
            }
        } catch {
            state.withLock { $0.status = .unavailable(error.description) }
            logger.info(
                "No memory-pressure signal from the platform; memory caches trim only when told",
                metadata: ["reason": "\(error.description)"]
            )
        }
    }
}

/// A listener of a ``MemoryPressureSource``, removed when this is released.
package final class MemoryPressureSubscription: Sendable {
    private let source: MemoryPressureSource
    private let id: UInt64

    init(source: MemoryPressureSource, id: UInt64) {
        self.source = source
        self.id = id
    }

    deinit {
        source.unsubscribe(id)
    }
}

/// How a ``MemoryStorage`` answers memory pressure: which source it listens to and how much it
/// keeps.
///
/// On a ``MemoryPressureLevel/warning`` the storage evicts, in its eviction policy's order,
/// until it holds at most ``keptOnWarning`` of the entries and of the cost it held; on
/// ``MemoryPressureLevel/critical`` it evicts everything. The entries go as evictions
/// (``RemovalCause/evictedForMemoryPressure``, counted in
/// ``StorageStatistics/pressureEvictions`` and reported as the metric
/// `evictions{reason=memory_pressure}`).
///
/// The default, ``automatic``, trims the storages that have a count or cost limit, which are
/// caches: a storage without limits holds what its owner put there, which may exist nowhere
/// else, so it is left alone unless it asks with ``trimming(keepingOnWarning:from:)``.
public struct MemoryPressureResponse: Sendable {
    /// The source listened to, or `nil` for none.
    public var source: MemoryPressureSource?
    /// The share, from 0 to 1, of its entries and of its cost a storage keeps on a warning.
    public var keptOnWarning: Double
    /// Whether a storage without a count or cost limit responds as well.
    public var includesUnbounded: Bool

    /// Creates a response; ``automatic``, ``ignored`` and ``trimming(keepingOnWarning:from:)``
    /// name the usual ones.
    public init(source: MemoryPressureSource?, keptOnWarning: Double, includesUnbounded: Bool) {
        self.source = source
        self.keptOnWarning = keptOnWarning
        self.includesUnbounded = includesUnbounded
    }

    /// A storage with a count or cost limit keeps half of what it holds on a platform warning
    /// and empties on a critical event; one without limits is left alone.
    public static var automatic: MemoryPressureResponse {
        MemoryPressureResponse(source: .system, keptOnWarning: 0.5, includesUnbounded: false)
    }

    /// The storage keeps what it holds, whatever the platform says.
    public static var ignored: MemoryPressureResponse {
        MemoryPressureResponse(source: nil, keptOnWarning: 1, includesUnbounded: false)
    }

    /// The storage keeps `keptOnWarning` of what it holds on a warning from `source` and
    /// empties on a critical event, with or without limits.
    public static func trimming(
        keepingOnWarning keptOnWarning: Double = 0.5,
        from source: MemoryPressureSource = .system
    ) -> MemoryPressureResponse {
        MemoryPressureResponse(source: source, keptOnWarning: keptOnWarning, includesUnbounded: true)
    }

    /// Why a storage cannot use this response, or `nil`.
    var configurationProblem: String? {
        guard keptOnWarning.isFinite, (0...1).contains(keptOnWarning) else {
            return "memoryPressure.keptOnWarning must be from 0 to 1, got \(keptOnWarning)"
        }
        return nil
    }
}
