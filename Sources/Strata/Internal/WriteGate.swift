import Synchronization
public import _StrataInternals

/// Keeps a layered storage's read-through backfill from overwriting a newer write.
///
/// Keys are spread over a fixed set of stripes by hash. Each stripe has an ``AsyncMutex`` that
/// writers hold for their whole write and a generation that they bump just before releasing it.
/// A reader notes the generation *before* it reads the front; it backfills only if it can take
/// the stripe's mutex at once and the generation has not moved, so a value read from the back
/// before a write finished can never land in the front after that write, and a read never waits
/// for a write. `BackedStorage` uses it over a front that cannot be written conditionally; its
/// writes go to the front only, so no lock is held while the back works.
///
/// It is also the one way writes to a key are serialised across awaits (`ObjectStore`'s writes
/// take a stripe each), without a lock of its own per key.
@usableFromInline
package final class WriteGate: Sendable {
    @usableFromInline
    package final class Stripe: Sendable {
        let generation = Atomic<UInt64>(0)
        let mutex = AsyncMutex()

        @usableFromInline
        init() {}
    }

    @usableFromInline let stripes: Striped<Stripe>

    @usableFromInline
    package init(stripeCount: Int = 64) {
        stripes = Striped(count: stripeCount) { Stripe() }
    }

    @usableFromInline
    package func stripe<Key: Hashable>(for key: Key) -> Stripe {
        stripes[key: key]
    }

    /// The generation of `stripe`, read before a layered read begins.
    @usableFromInline
    func snapshot(_ stripe: Stripe) -> UInt64 {
        stripe.generation.load(ordering: .acquiring)
    }

    /// Runs a write to `stripe`'s keys with its mutex held, then bumps the generation.
    @usableFromInline
    package func write<Result>(
        _ stripe: Stripe,
        _ body: () async throws(StorageError) -> Result
    ) async throws(StorageError) -> Result {
        await stripe.mutex.lock()
        defer {
            stripe.generation.add(1, ordering: .releasing)
            stripe.mutex.unlock()
        }
        return try await body()
    }

    /// Runs a write to every key (a clear) with every stripe's mutex held, then bumps every
    /// generation, so no backfill can be storing a value while it runs or land one after it.
    ///
    /// The mutexes are taken in stripe order; every other holder takes one stripe at a time, so
    /// two holders cannot wait for each other.
    @usableFromInline
    func writeAll<Result>(_ body: () async throws(StorageError) -> Result) async throws(StorageError) -> Result {
        for stripe in stripes.all {
            await stripe.mutex.lock()
        }
        defer {
            for stripe in stripes.all {
                stripe.generation.add(1, ordering: .releasing)
                stripe.mutex.unlock()
            }
        }
        return try await body()
    }

    /// Runs `body` (a backfill) only if no write to `stripe` is under way or finished since
    /// `generation` was read. Never waits: a backfill that would have to wait for a write is
    /// skipped, which costs a later read of the back, so a read is never held up by a write.
    @usableFromInline
    func backfill(
        _ stripe: Stripe,
        ifUnchangedSince generation: UInt64,
        _ body: () async throws(StorageError) -> Void
    ) async throws(StorageError) {
        guard stripe.mutex.tryLock() else { return }
        defer { stripe.mutex.unlock() }
        guard stripe.generation.load(ordering: .acquiring) == generation else { return }
        try await body()
    }
}
