#if Postgres
import Foundation
import Strata
import StrataPostgres

// The README's PostgreSQL blocks, between `// README: name` and `// README end`; StrataTests'
// ReadmeTests checks that the README shows exactly these lines. The sharding example is the
// "Getting started on a server" article's, copied there by hand. Compiled, not run: they name
// servers that do not exist here (PostgresStorageTests and SharedCacheTests run the same calls).

func readmePostgres(data: Data, newConfig: Data, profile: Data) async throws {
    // README: postgres
    let shared = try await PostgresStorage(url: "postgres://app@db.internal:5432/app")
    try await shared.set(data, forKey: "user:42", timeToLive: .seconds(600))
    try await shared.update(forKey: "counter") { value in value = data }  // atomic across processes
    // README end

    // README: shared-cache
    let cache = try await shared.sharedCache(in: MemoryStorage(maximumCount: 10_000))
    let config = try await cache.value(forKey: "config")  // memory, else PostgreSQL
    try await cache.set(newConfig, forKey: "config")  // every other process drops "config"
    // README end
    _ = config

    let eu = shared
    let us = try await PostgresStorage(url: "postgres://app@us.internal:5432/app")
    let asia = try await PostgresStorage(url: "postgres://app@asia.internal:5432/app")
    let users = sharded(across: [eu, us, asia])  // ShardedStorage<PostgresStorage>
    try await users.set(profile, forKey: "user:42")  // stored in exactly one of them
    await shared.close()  // stops the pool's task
}
// The "Running on many machines" article's block on changes, copied there by hand; compiled here,
// run by PostgresChangesTests.
func articlePostgresChanges(shared: PostgresStorage) async {
    for await change in shared.changes() {
        print(change.key, change.kind)  // "greeting set", "greeting removed", "session-7 expired", ...
    }
}
#endif
