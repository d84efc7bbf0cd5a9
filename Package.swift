// swift-tools-version: 6.2
import PackageDescription

/// The default traits: none for an app, so it resolves no server package; every server trait when
/// STRATA_POSTGRES_URL is set (the server the PostgreSQL suites use), so that a bare `swift test` in a
/// contributor's checkout builds and runs every suite in one run. SwiftPM gives a root package and a
/// dependency the same defaults; an app's build does not set this variable, so the variable is what
/// tells them apart. A package that depends on Strata and resolves with it set gets the server traits
/// too, as if it had asked for `traits: ["Server"]`.
let contributorTraits: Set<String> = (Context.environment["STRATA_POSTGRES_URL"] ?? "").isEmpty ? [] : ["Server"]

let package = Package(
    name: "Strata",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        // What an app uses; none of these resolves a server stack.
        .library(name: "Strata", targets: ["Strata"]),
        .library(name: "StrataTesting", targets: ["StrataTesting"]),
        .library(name: "StrataHTTP", targets: ["StrataHTTP"]),
        .library(name: "StrataObjects", targets: ["StrataObjects"]),
        .library(name: "StrataSQLite", targets: ["StrataSQLite"]),
        // The object store's database backends, apart so that a key-value user of SQLite or
        // PostgreSQL does not build the object store.
        .library(name: "StrataSQLiteObjects", targets: ["StrataSQLiteObjects"]),
        // What a server uses: each is an empty module unless its trait is enabled (`Server`
        // enables them all), and a package that leaves a trait off does not resolve what the
        // trait needs.
        .library(name: "StrataAsyncHTTPClient", targets: ["StrataAsyncHTTPClient"]),
        .library(name: "StrataPostgres", targets: ["StrataPostgres"]),
        .library(name: "StrataPostgresObjects", targets: ["StrataPostgresObjects"]),
        .library(name: "StrataServiceLifecycle", targets: ["StrataServiceLifecycle"]),
        .library(name: "StrataTracing", targets: ["StrataTracing"]),
        .library(name: "StrataHummingbird", targets: ["StrataHummingbird"]),
        .library(name: "StrataVapor", targets: ["StrataVapor"]),
        // The command-line tool. strata-bench, ProductServer and StrataFuzz are executable
        // targets and no product: this package runs them (`swift run strata-bench`), and a
        // package that depends on Strata never resolves what they need.
        .executable(name: "strata", targets: ["StrataCommandLine"]),
    ],
    traits: [
        .trait(
            name: "Postgres",
            description:
                "StrataPostgres and StrataPostgresObjects: PostgresStorage, SharedCache and the object backend (postgres-nio)."
        ),
        .trait(
            name: "AsyncHTTPClient",
            description: "StrataAsyncHTTPClient: HTTPSource and HTTPCache over AsyncHTTPClient."
        ),
        .trait(
            name: "ServiceLifecycle",
            description: "StrataServiceLifecycle: storage maintenance as a swift-service-lifecycle Service."
        ),
        .trait(name: "Tracing", description: "StrataTracing: spans through swift-distributed-tracing."),
        .trait(
            name: "Hummingbird",
            description: "StrataHummingbird: a Hummingbird PersistDriver over any Strata storage."
        ),
        .trait(name: "Vapor", description: "StrataVapor: a Vapor Cache over any Strata storage."),
        .trait(
            name: "Server",
            description:
                "Every server piece: PostgreSQL, AsyncHTTPClient, service lifecycle, tracing, Hummingbird and Vapor.",
            enabledTraits: ["Postgres", "AsyncHTTPClient", "ServiceLifecycle", "Tracing", "Hummingbird", "Vapor"]
        ),
        // An app resolves only swift-log, swift-metrics, swift-http-types, GRDB and
        // swift-argument-parser (the `strata` command's). A contributor's checkout with
        // STRATA_POSTGRES_URL set runs every suite (see `contributorTraits` above).
        .default(enabledTraits: contributorTraits),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/ordo-one/malloc-interposer", from: "1.6.1"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        // Only for `swift package generate-documentation`; no target depends on it.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
        .package(url: "https://github.com/vapor/vapor", from: "4.122.3"),
    ],
    targets: [
        // The core's only third-party dependencies: swift-log's and swift-metrics' APIs, which
        // carry no dependencies of their own and cost nothing unless a user opts in.
        .target(
            name: "Strata",
            dependencies: [
                "_StrataInternals",
                "CStrata",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]
        ),
        // What Swift cannot say: CRC-32C with the processor's instructions (the disk format's payload
        // checksum), cache prefetches (the eviction policies' batches of reads) and reads that never
        // wait for the disk (openat2 with RESOLVE_CACHED, preadv2 with RWF_NOWAIT).
        .target(name: "CStrata"),
        // What the modules share and users never see, all of it `package`: system calls, locks,
        // the I/O threads, deadlines, checksums and hashes, temporary-file names. Not a product;
        // a module that uses it says so here.
        .target(name: "_StrataInternals", dependencies: ["CStrata"]),
        .target(name: "StrataTesting", dependencies: ["Strata"]),
        .target(
            name: "StrataObjects",
            dependencies: ["_StrataInternals", "Strata", .product(name: "Logging", package: "swift-log")]
        ),
        // Helpers the test targets share (a recording log handler); not a product.
        .target(
            name: "StrataTestSupport",
            dependencies: ["_StrataInternals", "Strata", .product(name: "Logging", package: "swift-log")]
        ),
        // The HTTP cache and source in swift-http-types' currency types, over any transport;
        // URLSession's in the box, so an app needs no SwiftNIO.
        .target(
            name: "StrataHTTP",
            dependencies: [
                "_StrataInternals",
                "Strata",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "HTTPTypesFoundation", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The AsyncHTTPClient transport, for servers.
        .target(
            name: "StrataAsyncHTTPClient",
            dependencies: [
                "_StrataInternals",
                "Strata",
                "StrataHTTP",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(
                    name: "AsyncHTTPClient",
                    package: "async-http-client",
                    condition: .when(traits: ["AsyncHTTPClient"])
                ),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["AsyncHTTPClient"])),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .when(traits: ["AsyncHTTPClient"])),
            ]
        ),
        .target(
            name: "StrataSQLite",
            dependencies: [
                "_StrataInternals", "Strata", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "StrataSQLiteObjects",
            dependencies: [
                "_StrataInternals", "Strata", "StrataSQLite", "StrataObjects",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .target(
            name: "StrataPostgresObjects",
            dependencies: [
                "Strata",
                "StrataPostgres",
                "StrataObjects",
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["Postgres"])),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "StrataPostgres",
            dependencies: [
                "_StrataInternals",
                "Strata",
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["Postgres"])),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Postgres"])),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .when(traits: ["Postgres"])),
                .product(
                    name: "ServiceLifecycle",
                    package: "swift-service-lifecycle",
                    condition: .when(traits: ["Postgres"])
                ),
            ]
        ),
        // Spans for storage operations and provider fetches, through swift-distributed-tracing.
        .target(
            name: "StrataTracing",
            dependencies: [
                "Strata",
                .product(name: "Tracing", package: "swift-distributed-tracing", condition: .when(traits: ["Tracing"])),
            ]
        ),
        // Storage maintenance as a service of an app's ServiceGroup.
        .target(
            name: "StrataServiceLifecycle",
            dependencies: [
                "Strata",
                .product(
                    name: "ServiceLifecycle",
                    package: "swift-service-lifecycle",
                    condition: .when(traits: ["ServiceLifecycle"])
                ),
            ]
        ),
        // The adapters: with their trait off, an empty module, and their framework is not resolved.
        .target(
            name: "StrataHummingbird",
            dependencies: [
                "Strata",
                .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: ["Hummingbird"])),
            ]
        ),
        .target(
            name: "StrataVapor",
            dependencies: [
                "Strata",
                .product(name: "Vapor", package: "vapor", condition: .when(traits: ["Vapor"])),
            ]
        ),
        // A small HTTP/1.1 server on SwiftNIO for the HTTP tests; not a product, and only tests use
        // it, so a package that depends on Strata never resolves SwiftNIO for it.
        .target(
            name: "LocalHTTPServer",
            dependencies: [
                "_StrataInternals",
                "Strata",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // The `strata` command. Its module is not named `strata`: that would collide with
        // `Strata` on case-insensitive file systems.
        .executableTarget(
            name: "StrataCommandLine",
            dependencies: [
                "_StrataInternals",
                "Strata",
                "StrataHTTP",
                "StrataObjects",
                "StrataSQLite",
                "StrataPostgres",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .executableTarget(
            name: "strata-bench",
            dependencies: [
                "_StrataInternals",
                "Strata",
                "StrataObjects",
                .product(name: "CoreMetrics", package: "swift-metrics"),
                "StrataSQLite",
                "StrataPostgres",
                "StrataHTTP",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["Postgres"])),
                .product(name: "MallocInterposerSwift", package: "malloc-interposer"),
            ]
        ),
        // The example server scripts/load.sh drives with wrk; needs the Hummingbird trait.
        .executableTarget(
            name: "ProductServer",
            dependencies: [
                "Strata",
                "StrataPostgres",
                .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: ["Hummingbird"])),
                .product(
                    name: "AsyncHTTPClient",
                    package: "async-http-client",
                    condition: .when(traits: ["AsyncHTTPClient"])
                ),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["AsyncHTTPClient"])),
                .product(
                    name: "NIOConcurrencyHelpers",
                    package: "swift-nio",
                    condition: .when(traits: ["AsyncHTTPClient"])
                ),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .when(traits: ["AsyncHTTPClient"])),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: ["AsyncHTTPClient"])),
            ],
            path: "Examples/ProductServer"
        ),
        // The data layer of an app with an image feed, which the article "Strata in an app"
        // (Strata.docc) walks through; StrataHTTPTests runs it against a local server.
        .target(
            name: "ImageFeed",
            dependencies: ["Strata", "StrataHTTP", "StrataObjects"],
            path: "Examples/ImageFeed"
        ),
        // A libFuzzer target over the disk format's parsers, built only on demand: see its source.
        .executableTarget(name: "StrataFuzz", dependencies: ["Strata"]),
        .testTarget(
            name: "StrataTests",
            dependencies: [
                "_StrataInternals",
                "Strata",
                "StrataTesting",
                "StrataTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ],
            // The fuzzer's corpus, replayed by DiskFuzzCorpusTests from the source tree.
            exclude: ["Fuzz/Corpus"]
        ),
        .testTarget(
            name: "StrataObjectsTests",
            dependencies: [
                "_StrataInternals",
                "Strata", "StrataObjects", "StrataSQLite", "StrataSQLiteObjects", "StrataTesting", "StrataTestSupport",
                "StrataCommandLine",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "StrataSQLiteTests",
            dependencies: [
                "Strata", "StrataSQLite", "StrataSQLiteObjects", "StrataObjects", "StrataTesting", "StrataTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ]
        ),
        .testTarget(
            name: "StrataPostgresTests",
            dependencies: [
                "Strata", "StrataPostgres", "StrataPostgresObjects", "StrataObjects", "StrataTesting",
                "StrataTestSupport", "StrataCommandLine",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["Postgres"])),
            ]
        ),
        // The command line, and the multi-process tests that run it as a writer: the only tests
        // that need the executable (and so GRDB, postgres-nio and AsyncHTTPClient).
        .testTarget(
            name: "StrataCommandLineTests",
            dependencies: ["_StrataInternals", "Strata", "StrataSQLite", "StrataTestSupport", "StrataCommandLine"]
        ),
        .testTarget(
            name: "StrataHummingbirdTests",
            dependencies: [
                "Strata", "StrataHummingbird", "StrataSQLite", "StrataPostgres", "StrataTestSupport",
                .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: ["Hummingbird"])),
                .product(name: "HummingbirdTesting", package: "hummingbird", condition: .when(traits: ["Hummingbird"])),
            ]
        ),
        .testTarget(
            name: "StrataVaporTests",
            dependencies: [
                "Strata", "StrataVapor", "StrataSQLite", "StrataPostgres", "StrataTestSupport",
                .product(name: "Vapor", package: "vapor", condition: .when(traits: ["Vapor"])),
                .product(name: "VaporTesting", package: "vapor", condition: .when(traits: ["Vapor"])),
            ]
        ),
        .testTarget(
            name: "StrataServiceLifecycleTests",
            dependencies: [
                "_StrataInternals",
                "Strata", "StrataPostgres", "StrataServiceLifecycle", "StrataTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["Postgres"])),
                .product(
                    name: "ServiceLifecycle",
                    package: "swift-service-lifecycle",
                    condition: .when(traits: ["ServiceLifecycle"])
                ),
                .product(
                    name: "ServiceLifecycleTestKit",
                    package: "swift-service-lifecycle",
                    condition: .when(traits: ["ServiceLifecycle"])
                ),
            ]
        ),
        .testTarget(
            name: "StrataTracingTests",
            dependencies: [
                "_StrataInternals",
                "Strata", "StrataTracing", "StrataTestSupport",
                .product(name: "Tracing", package: "swift-distributed-tracing", condition: .when(traits: ["Tracing"])),
                .product(
                    name: "InMemoryTracing",
                    package: "swift-distributed-tracing",
                    condition: .when(traits: ["Tracing"])
                ),
            ]
        ),
        .testTarget(
            name: "StrataHTTPTests",
            dependencies: [
                "_StrataInternals",
                "Strata",
                "StrataHTTP",
                "StrataAsyncHTTPClient",
                "StrataTestSupport",
                "LocalHTTPServer",
                "StrataObjects",
                "ImageFeed",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
    ]
)

// Every Swift target gets the same upcoming features, as swift-log does.
for target in package.targets where [.executable, .test, .regular].contains(target.type) {
    if target.name.hasPrefix("C") { continue }  // C targets take no Swift settings
    var settings = target.swiftSettings ?? []
    // SE-0335: existential types are spelled `any P`.
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    // SE-0444: a file sees only the members of modules it imports.
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    // SE-0409: imports are internal unless marked otherwise.
    settings.append(.enableUpcomingFeature("InternalImportsByDefault"))
    // SE-0461: nonisolated async functions run on the caller's executor, so closures passed to
    // `update(forKey:_:)` need not be `@Sendable`.
    settings.append(.enableUpcomingFeature("NonisolatedNonsendingByDefault"))
    target.swiftSettings = settings
}
