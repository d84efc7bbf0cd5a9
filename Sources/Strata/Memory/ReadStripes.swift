public import Synchronization
public import _StrataInternals

/// The lock-free side of a ``ShardedMemoryCache``'s reads: one stripe per thread, each on cache
/// lines of its own, holding what a read writes (its hit or miss, the access it buffers for the
/// policy) and the word that tells writers which shard the read is in.
///
/// A read takes its thread's stripe (a compare-and-swap of the stripe's word from 0 to the shard's
/// index + 1), checks that no writer holds the shard, looks the key up, counts and buffers the
/// read, and gives the stripe back (the word to 0). A writer, holding the shard's lock, raises the shard's flag and waits until no
/// stripe's word names the shard. Each side writes its own word first and reads the other's after,
/// both sequentially consistent, so a read either sees the flag and takes the shard's lock instead,
/// or is seen and waited for: a read never looks at a dictionary while it changes, and writes
/// nothing that another core's read also writes. Two threads that pick the same stripe find it
/// taken; the later moves its ``StripeProbe`` to another stripe, or takes the shard's lock.
///
/// Drains and statistics take a stripe with the word -1, waiting for its read to end.
@usableFromInline
final class ReadStripes: @unchecked Sendable {
    // Safe: each stripe's fields other than its word are touched only by whoever set the word
    // from 0 (a reader, a drain, the statistics), which it sets back to 0 with release ordering.

    /// The stripe fields that follow the word.
    @usableFromInline
    struct Stripe {
        @usableFromInline var pending: [PendingAccess] = []
        @usableFromInline var hits: UInt64 = 0
        @usableFromInline var misses: UInt64 = 0

        @usableFromInline init() {}
    }

    /// A stripe's word while a drain or the statistics have it.
    @usableFromInline static var held: Int { -1 }

    @usableFromInline let base: UnsafeMutableRawPointer
    @usableFromInline let stride: Int
    @usableFromInline let fieldsOffset: Int
    /// The number of stripes minus one; the count is a power of two, at most 64.
    @usableFromInline let mask: Int
    /// Bit `i` is set when stripe `i` may hold reads the policy has not seen.
    @usableFromInline let pendingStripes = Atomic<UInt64>(0)

    init(count: Int) {
        precondition(count > 0 && count <= 64 && count & (count - 1) == 0)
        let cacheLine = 128
        fieldsOffset = max(MemoryLayout<Atomic<Int>>.stride, MemoryLayout<Stripe>.alignment)
        stride = (fieldsOffset + MemoryLayout<Stripe>.size + cacheLine - 1) / cacheLine * cacheLine
        mask = count - 1
        base = UnsafeMutableRawPointer.allocate(byteCount: stride * count, alignment: cacheLine)
        for index in 0..<count {
            let cell = base + index * stride
            cell.bindMemory(to: Atomic<Int>.self, capacity: 1).initialize(to: Atomic(0))
            (cell + fieldsOffset).bindMemory(to: Stripe.self, capacity: 1).initialize(to: Stripe())
        }
    }

    deinit {
        for index in 0...mask {
            let cell = base + index * stride
            (cell + fieldsOffset).assumingMemoryBound(to: Stripe.self).deinitialize(count: 1)
            cell.assumingMemoryBound(to: Atomic<Int>.self).deinitialize(count: 1)
        }
        base.deallocate()
    }

    @inlinable
    func word(_ index: Int) -> UnsafeMutablePointer<Atomic<Int>> {
        (base + index &* stride).assumingMemoryBound(to: Atomic<Int>.self)
    }

    @inlinable
    func fields(_ index: Int) -> UnsafeMutablePointer<Stripe> {
        (base + index &* stride + fieldsOffset).assumingMemoryBound(to: Stripe.self)
    }

    /// Takes the calling thread's stripe for a read of shard `shard`, or another if another thread
    /// has that one; `nil` if that was taken too.
    @inlinable @inline(__always)
    func enter(shard: Int) -> Int? {
        take(setting: shard &+ 1)
    }

    /// Buffers `access` in the calling thread's stripe for a caller in no shard's read (a write that
    /// replaced a value, and is heard of as a read), marking the stripe pending when it was empty;
    /// `nil`, recording nothing, when that stripe and another were taken.
    @inlinable
    func record(_ access: PendingAccess) -> RecordedRead? {
        guard let index = take(setting: Self.held) else { return nil }
        let recorded = RecordedRead.record(access, in: &fields(index).pointee.pending)
        release(index)
        if recorded == .first { markPending(index) }
        return recorded
    }

    /// Sets the calling thread's stripe's word from 0 to `word`, or another stripe's if another
    /// thread has that one; returns the stripe, or `nil` if both were taken.
    @inlinable @inline(__always)
    func take(setting word: Int) -> Int? {
        let index = Int(truncatingIfNeeded: StripeProbe.current()) & mask
        if self.word(index).pointee.compareExchange(expected: 0, desired: word, ordering: .sequentiallyConsistent)
            .exchanged
        {
            return index
        }
        return takeAnother(setting: word)
    }

    /// `take(setting:)` for a thread whose stripe was taken: it moves to another stripe for this
    /// call and the next.
    @usableFromInline
    func takeAnother(setting word: Int) -> Int? {
        let index = Int(truncatingIfNeeded: StripeProbe.advance()) & mask
        if self.word(index).pointee.compareExchange(expected: 0, desired: word, ordering: .sequentiallyConsistent)
            .exchanged
        {
            return index
        }
        return nil
    }

    /// Gives stripe `index` back.
    @inlinable
    func release(_ index: Int) {
        word(index).pointee.store(0, ordering: .releasing)
    }

    /// Marks stripe `index` as holding reads the policy has not seen.
    @inlinable
    func markPending(_ index: Int) {
        pendingStripes.bitwiseOr(1 &<< UInt64(index), ordering: .relaxed)
    }

    /// Waits until no read is in shard `shard`. Call it after raising the shard's flag.
    @inlinable
    func waitForReads(inShard shard: Int) {
        let reading = shard &+ 1
        for index in 0...mask {
            var spins = 0
            while word(index).pointee.load(ordering: .sequentiallyConsistent) == reading {
                spins &+= 1
                if spins > 64 { StripeProbe.yieldThread() }
            }
        }
    }

    /// Runs `body` on stripe `index`'s fields, waiting for the read that has it to end.
    @inlinable
    func withStripe<Result>(_ index: Int, _ body: (inout Stripe) -> Result) -> Result {
        let word = word(index)
        var spins = 0
        while !word.pointee.compareExchange(expected: 0, desired: Self.held, ordering: .acquiring).exchanged {
            spins &+= 1
            if spins > 64 { StripeProbe.yieldThread() }
        }
        defer { word.pointee.store(0, ordering: .releasing) }
        return body(&fields(index).pointee)
    }

    /// The stripes marked pending since the last call, unmarked.
    @inlinable
    func takePending() -> UInt64 {
        pendingStripes.exchange(0, ordering: .relaxed)
    }
}
