#if Postgres
import Foundation
import Strata
import StrataObjects
import StrataPostgres
import StrataPostgresObjects

// The README's PostgreSQL blocks, which "Getting started on a server" (Strata.docc) shows too, and
// the PostgreSQL examples of that article, of "Running on many machines" and of the StrataPostgres
// and StrataPostgresObjects catalogs, each between `// snippet: name` and `// snippet end`;
// StrataTests' ReadmeTests checks that the documents show exactly these lines. Compiled, not run:
// they name servers that do not exist here (PostgresStorageTests, SharedCacheTests,
// PostgresChangesTests and the object backend's tests run the same calls).

func readmePostgres(data: Data, newConfig: Data, profile: Data) async throws {
    // snippet: postgres
    let shared = try await PostgresStorage(url: "postgres://app@db.internal:5432/app")
    try await shared.set(data, forKey: "user:42", timeToLive: .seconds(600))
    try await shared.update(forKey: "counter") { value in value = data }  // atomic across processes
    // snippet end

    // snippet: shared-cache
    let cache = try await shared.sharedCache(in: MemoryStorage(maximumCount: 10_000))
    let config = try await cache.value(forKey: "config")  // memory, else PostgreSQL
    try await cache.set(newConfig, forKey: "config")  // every other process drops "config"
    // snippet end
    _ = config

    let eu = shared
    let us = try await PostgresStorage(url: "postgres://app@us.internal:5432/app")
    let asia = try await PostgresStorage(url: "postgres://app@asia.internal:5432/app")
    // snippet: sharding
    let users = sharded(across: [eu, us, asia])  // ShardedStorage<PostgresStorage>
    try await users.set(profile, forKey: "user:42")  // stored in exactly one of them
    // snippet end
    await shared.close()  // stops the pool's task
}

/// "Running on many machines": a shared cache, and sharding.
func articleRunningOnManyMachines(eu: PostgresStorage, us: PostgresStorage, asia: PostgresStorage) async throws {
    let profile = Data("Ada".utf8)
    // snippet: many-machines-shared-cache
    let shared = try await PostgresStorage(url: "postgres://app@db.internal:5432/app")
    let cache = try await shared.sharedCache(in: MemoryStorage(maximumCount: 10_000))
    let config = try await cache.value(forKey: "config")  // memory, else PostgreSQL
    // snippet end
    _ = config

    // snippet: many-machines-sharding
    let users = sharded(across: [eu, us, asia])  // three PostgresStorage
    try await users.set(profile, forKey: "user:42")  // stored in exactly one of them
    // snippet end
}

/// "Running on many machines": what changed in the table, from any process (PostgresChangesTests
/// runs the same loop).
func articlePostgresChanges(shared: PostgresStorage) async {
    // snippet: postgres-changes
    for await change in shared.changes() {
        print(change.key, change.kind)  // "greeting set", "greeting removed", "session-7 expired", ...
    }
    // snippet end
}

/// StrataPostgres' catalog page.
func articlePostgresCatalog() async throws {
    // snippet: postgres-overview
    let shared = try await PostgresStorage(url: "postgres://app@127.0.0.1:5432/app")
    let cache = try await shared.sharedCache(in: MemoryStorage(maximumCount: 10_000))
    try await cache.set(Data("v2".utf8), forKey: "config")  // other processes drop "config"
    // snippet end
}

/// StrataPostgresObjects' catalog page.
enum ArticlePostgresObjects {
    struct Todo: Codable, Identifiable, Sendable {
        var id = UUID()
        var title: String
        var priority: Int
    }

    static func example() async throws -> ObjectStore<Todo> {
        // snippet: postgres-object-backend
        let database = try await PostgresStorage(url: "postgres://app@127.0.0.1:5432/app")
        let backend = try await PostgresObjectBackend<Todo>(
            storage: database,
            table: "todos",
            indexes: [.init("priority", \.priority)]
        )
        let todos = ObjectStore<Todo>(backend: backend)
        // snippet end
        return todos
    }
}
#endif
