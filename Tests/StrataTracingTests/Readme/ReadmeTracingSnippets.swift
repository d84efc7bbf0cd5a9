#if Tracing
import Foundation
import Strata
import StrataTracing

// The tracing example of "Getting started on a server" (Strata.docc), between `// snippet: name`
// and `// snippet end`; StrataTests' ReadmeTests checks that the article shows exactly these
// lines. TracingTests runs the same calls with an in-memory tracer.

func readmeTracing(
    memory: MemoryStorage<String, Data>,
    disk: DiskStorage,
    fetch: @escaping @Sendable (String) async throws -> Data
) async throws {
    // snippet: tracing
    // Spans go to the tracer bootstrapped with InstrumentationSystem.bootstrap(_:).
    let pages = memory.traced(as: "pages.memory").combined(with: disk.traced(as: "pages.disk"))
    let fetched = AnyProvider { (url: String) in try await fetch(url) }
        .traced(as: "pages.origin")  // one span per call to the origin
        .cache(pages)
        .coordinated()
    _ = try await fetched.value(for: "https://example.com/")
    // snippet end
}
#endif
