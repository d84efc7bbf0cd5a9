#if Vapor && Postgres
import Foundation
import Strata
import StrataVapor
import Vapor

// The Vapor example of "Getting started on a server" (Strata.docc), between `// snippet: name` and
// `// snippet end`; StrataTests' ReadmeTests checks that the article shows exactly these lines.
// StrataCacheTests runs the same calls through real requests.

func readmeVapor(app: Application, fetchQuote: @escaping @Sendable () async throws -> String) throws {
    // snippet: vapor
    app.caches.use(.strata(MemoryStorage<String, Data>(maximumCount: 10_000, timeToLive: .seconds(300))))

    app.get("quote") { request async throws -> String in
        if let quote = try await request.cache.get("quote", as: String.self) { return quote }
        let quote = try await fetchQuote()
        try await request.cache.set("quote", to: quote, expiresIn: .minutes(5))
        return quote
    }
    // snippet end
}
#endif
