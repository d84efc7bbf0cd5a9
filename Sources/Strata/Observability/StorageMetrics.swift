public import CoreMetrics

/// Where a storage reports its metrics through swift-metrics: a label prefix, dimensions added to
/// every metric, and the factory that makes them.
///
/// Metrics are off unless a storage is given one of these, and a storage without them pays
/// nothing for them: no allocation and no extra work on a hit. With a prefix of `myapp.cache`, a
/// storage reports:
///
/// | label | kind | moves when |
/// | --- | --- | --- |
/// | `myapp.cache.hits` | counter | a read finds a live value |
/// | `myapp.cache.misses` | counter | a read finds nothing, an expired value or a damaged file |
/// | `myapp.cache.writes` | counter | a value is stored |
/// | `myapp.cache.evictions` | counter, dimension `reason`: `count`, `size`, `expiry` or `memory_pressure` | an entry is dropped to keep a limit, has expired, or was given back under memory pressure |
/// | `myapp.cache.rejections` | counter | a value costlier than the whole limit is not kept |
/// | `myapp.cache.damaged_files` | counter | a ``DiskStorage`` finds a damaged file |
/// | `myapp.cache.entries` | gauge | the number of entries changes |
/// | `myapp.cache.bytes` | gauge | the total cost (bytes for `Data`, `String` and disk) changes |
/// | `myapp.cache.duration` | timer, dimension `operation`: `get`, `set`, `remove`, `update`, `trim` | each call |
/// | `myapp.cache.source_calls` | counter | a ``CoordinatedProvider`` asks its source |
/// | `myapp.cache.coalesced_waiters` | counter | a ``CoordinatedProvider`` request joins a fetch already running |
///
/// ```swift
/// let cache = MemoryStorage<String, Data>(maximumCount: 1_000, metrics: .init(prefix: "myapp.cache"))
/// ```
public struct StorageMetrics: Sendable {
    /// The start of every label, such as `myapp.cache`.
    public var prefix: String
    /// Dimensions added to every metric, such as `[("tier", "memory")]`.
    public var dimensions: [(String, String)]
    /// The factory that makes the metrics: the one bootstrapped with `MetricsSystem` unless
    /// another is given (tests pass their own).
    public var factory: any MetricsFactory

    /// Creates metrics labelled `prefix.…`, made by `factory`.
    ///
    /// - Parameters:
    ///   - prefix: The start of every label.
    ///   - dimensions: Dimensions added to every metric.
    ///   - factory: The factory; by default the one bootstrapped with `MetricsSystem.bootstrap`.
    public init(
        prefix: String,
        dimensions: [(String, String)] = [],
        factory: any MetricsFactory = MetricsSystem.factory
    ) {
        self.prefix = prefix
        self.dimensions = dimensions
        self.factory = factory
    }

    func label(_ name: String) -> String {
        prefix.isEmpty ? name : "\(prefix).\(name)"
    }

    func counter(_ name: String, _ extra: [(String, String)] = []) -> Counter {
        Counter(label: label(name), dimensions: dimensions + extra, factory: factory)
    }

    func gauge(_ name: String) -> Gauge {
        Gauge(label: label(name), dimensions: dimensions, factory: factory)
    }

    func timer(_ name: String, _ extra: [(String, String)] = []) -> Timer {
        Timer(label: label(name), dimensions: dimensions + extra, factory: factory)
    }
}
