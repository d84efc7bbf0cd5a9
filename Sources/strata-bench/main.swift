import Foundation

// `swift run -c release strata-bench [--json] [--filter PREFIX] [--rounds N]`: see `Options.usage`.

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// `strata-bench hitrate [...]` compares the eviction policies' hit ratios: see `HitRateCommand.usage`.
if CommandLine.arguments.dropFirst().first == "hitrate" {
    exit(await HitRateCommand.run(arguments: Array(CommandLine.arguments.dropFirst(2))))
}
// `strata-bench instructions FIGURE COUNT` runs one figure's reads for callgrind: see
// `InstructionsCommand.usage`.
if CommandLine.arguments.dropFirst().first == "instructions" {
    exit(await InstructionsCommand.run(arguments: Array(CommandLine.arguments.dropFirst(2))))
}
// `strata-bench footprint` prints memory.bytes.per.entry: see `FootprintCommand.usage`.
if CommandLine.arguments.dropFirst().first == "footprint" {
    exit(FootprintCommand.run(arguments: Array(CommandLine.arguments.dropFirst(2))))
}

/// Every figure, in the order a full run prints them. A new family of figures (disk, SQLite,
/// eviction policies) adds its list here, and its goals below.
/// The PostgreSQL figures need a server: `eval "$(scripts/postgres.sh start)"` starts one.
let hasPostgres = !(ProcessInfo.processInfo.environment["STRATA_POSTGRES_URL"] ?? "").isEmpty
let benchmarks =
    Benchmark.memory + Benchmark.concurrent + Benchmark.policy + Benchmark.disk + Benchmark.provider
    + Benchmark.http + Benchmark.observability
    + Benchmark.objects + Benchmark.sqlite + (hasPostgres ? Benchmark.postgres : [])
let goals = Goal.memory + Goal.concurrency + Goal.disk + Goal.provider + Goal.http + Goal.objects + Goal.database

let options: Options
do {
    options = try Options(arguments: Array(CommandLine.arguments.dropFirst()))
} catch {
    FileHandle.standardError.write(Data("strata-bench: \(error)\n\n\(Options.usage)\n".utf8))
    exit(2)
}
if options.help {
    print(Options.usage)
    exit(0)
}

// A build without optimization times the debug code, not Strata: provider.coordinated.10000
// added 2.55 µs per waiter over its baseline in a debug build, against 0.05 to 0.67 µs in release
// builds on the same machine, and its goal read "NOT met". Such figures are refused, not printed.
#if DEBUG
if !options.list {
    FileHandle.standardError.write(
        Data(
            """
            strata-bench: this build is not optimized (debug), so its figures would measure the debug \
            code, not Strata's. Build it with `swift run -c release strata-bench` (or \
            `swift build -c release --product strata-bench`).

            """.utf8
        )
    )
    exit(2)
}
#endif

let selected = benchmarks.filter { options.selects($0.name) }
if options.list {
    for benchmark in selected {
        print(benchmark.name)
    }
    exit(0)
}
guard !selected.isEmpty else {
    FileHandle.standardError.write(Data("strata-bench: no figure matches \(options.filters)\n".utf8))
    exit(1)
}

// Before any output: this may re-execute the bench with the interposer preloaded.
let countsAllocations = selected.contains { $0.countsAllocations } && AllocationCounter.prepare()

let reporter = Reporter(json: options.json)
if !hasPostgres, Benchmark.postgres.contains(where: { options.selects($0.name) }) {
    FileHandle.standardError.write(
        Data(
            ("strata-bench: postgres.* skipped: STRATA_POSTGRES_URL is not set "
                + "(eval \"$(scripts/postgres.sh start)\" starts a throwaway server)\n").utf8
        )
    )
}
let runner = Runner(rounds: options.rounds, countsAllocations: countsAllocations)
let clock = ContinuousClock()
let start = clock.now
reporter.begin(rounds: options.rounds, allocationCalibration: AllocationCounter.calibration)
var results: [BenchmarkResult] = []
for benchmark in selected {
    do {
        let result = try await runner.run(benchmark)
        results.append(result)
        reporter.report(result)
    } catch {
        FileHandle.standardError.write(Data("strata-bench: \(benchmark.name) failed: \(error)\n".utf8))
        exit(1)
    }
}
reporter.finish(results, goals: goals, seconds: start.duration(to: clock.now).nanoseconds / 1e9)
