import _StrataInternals

/// Keeps the front of a layered storage from keeping a value older than its back's, without
/// holding any lock while either layer works.
///
/// Keys are spread over a few stripes by hash. Each stripe counts the writes in flight and has a
/// generation that every write bumps when it begins and again when it ends. The decisions are
/// made under a lock that is never held across an `await`:
///
/// - A read notes its stripe's generation before it reads the back. It stores what it found in
///   the front only if no write was in flight then or has happened since, and checks again once
///   the value is stored: if a write began meanwhile, it removes what it stored.
/// - A write that overlapped another write of its stripe (they may have reached the two layers in
///   different orders) removes its key from the front when it ends.
///
/// So the front may miss a key it could have held, at the cost of one more read of the back, but
/// it never keeps a value that the back has since replaced or removed. Nothing waits: a read of
/// one key is never delayed by a write of another, and a read waiting on the back can be
/// cancelled like the back's own call. Making one costs two allocations.
@usableFromInline
final class WriteTracker: Sendable {
    /// What a read or a write noted when it began.
    @usableFromInline
    struct Ticket: Sendable {
        @usableFromInline let stripe: Int
        @usableFromInline let generation: UInt64
    }

    private struct Stripe {
        var generation: UInt64 = 0
        var writesInFlight = 0
    }

    private static let stripeCount = 16
    private let stripes = LockedState([Stripe](repeating: Stripe(), count: stripeCount))

    @usableFromInline
    init() {}

    /// The stripe `key` falls in: writes of keys in the same stripe keep each other's reads from
    /// filling the front.
    @usableFromInline
    func stripe<Key: Hashable>(for key: Key) -> Int {
        Striping.index(of: key, count: Self.stripeCount)
    }

    /// Notes the generation of `key`'s stripe, before a read of the back begins.
    @usableFromInline
    func beginRead<Key: Hashable>(of key: Key) -> Ticket {
        let stripe = stripe(for: key)
        return Ticket(stripe: stripe, generation: stripes.withLock { $0[stripe].generation })
    }

    /// Whether no write of the ticket's stripe is in flight or has begun since it was taken.
    @usableFromInline
    func isUndisturbed(since ticket: Ticket) -> Bool {
        stripes.withLock { stripes in
            stripes[ticket.stripe].generation == ticket.generation && stripes[ticket.stripe].writesInFlight == 0
        }
    }

    /// Records the start of a write of `key`.
    @usableFromInline
    func beginWrite<Key: Hashable>(of key: Key) -> Ticket {
        let stripe = stripe(for: key)
        let generation = stripes.withLock { stripes in
            stripes[stripe].generation &+= 1
            stripes[stripe].writesInFlight += 1
            return stripes[stripe].generation
        }
        return Ticket(stripe: stripe, generation: generation)
    }

    /// Records the end of a write; returns whether another write of its stripe overlapped it.
    @usableFromInline
    func endWrite(_ ticket: Ticket) -> Bool {
        stripes.withLock { stripes in
            let overlapped =
                stripes[ticket.stripe].generation != ticket.generation || stripes[ticket.stripe].writesInFlight > 1
            stripes[ticket.stripe].generation &+= 1
            stripes[ticket.stripe].writesInFlight -= 1
            return overlapped
        }
    }

    /// Records the start of one write of several keys: once per stripe they fall in, so keys of
    /// one write never count as overlapping one another.
    @usableFromInline
    func beginWrite<Key: Hashable>(ofKeys keys: [Key]) -> [Ticket] {
        let touched = Set(keys.map { stripe(for: $0) })
        return stripes.withLock { stripes in
            touched.map { stripe in
                stripes[stripe].generation &+= 1
                stripes[stripe].writesInFlight += 1
                return Ticket(stripe: stripe, generation: stripes[stripe].generation)
            }
        }
    }

    /// Records the end of a write begun with ``beginWrite(ofKeys:)``; returns the stripes that
    /// another write overlapped.
    @usableFromInline
    func endWrite(_ tickets: [Ticket]) -> Set<Int> {
        var overlapped: Set<Int> = []
        for ticket in tickets where endWrite(ticket) { overlapped.insert(ticket.stripe) }
        return overlapped
    }

    /// Records the start of a write of every key (a clear).
    @usableFromInline
    func beginWriteOfAll() {
        stripes.withLock { stripes in
            for index in stripes.indices {
                stripes[index].generation &+= 1
                stripes[index].writesInFlight += 1
            }
        }
    }

    /// Records the end of a write of every key.
    @usableFromInline
    func endWriteOfAll() {
        stripes.withLock { stripes in
            for index in stripes.indices {
                stripes[index].generation &+= 1
                stripes[index].writesInFlight -= 1
            }
        }
    }

    /// Runs a write of `key` through both layers, then, if another write overlapped it, runs
    /// `invalidate` (which removes the key from the front), whether the write succeeded or not.
    @inlinable
    func write<Key: Hashable, Result>(
        of key: Key,
        _ body: () async throws(StorageError) -> Result,
        invalidate: () async -> Void
    ) async throws(StorageError) -> Result {
        let ticket = beginWrite(of: key)
        let result: Swift.Result<Result, StorageError>
        do throws(StorageError) {
            result = .success(try await body())
        } catch {
            result = .failure(error)
        }
        if endWrite(ticket) { await invalidate() }
        return try result.get()
    }

    /// Stores a value read from the back in the front, unless a write could have made it stale:
    /// skipped when a write began since `ticket` or is in flight, and undone (`remove`) when one
    /// began while `store` ran. A failed store does not fail the read (it only costs a later
    /// miss), but is checked the same way, since it may have stored part of its work.
    @inlinable
    func backfill(
        since ticket: Ticket,
        store: () async throws(StorageError) -> Void,
        remove: () async -> Void
    ) async {
        guard isUndisturbed(since: ticket) else { return }
        try? await store()
        if !isUndisturbed(since: ticket) { await remove() }
    }
}
