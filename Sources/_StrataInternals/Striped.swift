/// A fixed set of `Element`s (locks, generations) that keys are spread over by hash, so that
/// work on two keys rarely shares one, without one per key.
///
/// The one striping rule of Strata: ``DiskStorage``'s file locks, the write gate that orders a
/// layered storage's writes and backfills (and ``ObjectStore``'s writes), and the write tracker
/// that keeps a front from holding a value older than its back's all pick their stripe here.
public struct Striped<Element: Sendable>: Sendable {
    @usableFromInline let elements: [Element]

    /// `count` stripes, each made by `make`.
    public init(count: Int, _ make: () -> Element) {
        precondition(count > 0, "a striped set needs at least one stripe")
        elements = (0..<count).map { _ in make() }
    }

    /// Every stripe, in order (to take them all, always in this order, so that two who do cannot
    /// wait for each other).
    @inlinable
    public var all: [Element] { elements }

    /// The stripe of `hash` (a digest's first bytes, say: already spread evenly).
    @inlinable
    public subscript(hash hash: Int) -> Element {
        elements[Striping.index(ofHash: hash, count: elements.count)]
    }

    /// The stripe of `key`.
    @inlinable
    public subscript<Key: Hashable>(key key: Key) -> Element {
        self[hash: key.hashValue]
    }
}

/// The rule ``Striped`` picks a stripe by, for state that keeps its stripes otherwise (several
/// under one lock, say).
public enum Striping {
    /// The index of the stripe `hash` falls in, among `count`.
    @inlinable
    public static func index(ofHash hash: Int, count: Int) -> Int {
        Int(UInt(bitPattern: hash) % UInt(count))
    }

    /// The index of the stripe `key` falls in, among `count`.
    @inlinable
    public static func index<Key: Hashable>(of key: Key, count: Int) -> Int {
        index(ofHash: key.hashValue, count: count)
    }
}
