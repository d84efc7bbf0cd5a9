#if Hummingbird && Postgres
import Foundation
import Hummingbird
import PostgresNIO
import Strata
import StrataHummingbird
import StrataPostgres
import StrataServiceLifecycle

// The Hummingbird example of "Getting started on a server" (Strata.docc), between
// `// snippet: name` and `// snippet end`; StrataTests' ReadmeTests checks that the article shows
// exactly these lines. Compiled, not run: it names a server that does not exist here
// (StrataPersistDriverTests and ServiceLifecycleTests run the same calls).

func readmeHummingbird(url: String) async throws {
    // snippet: hummingbird
    let client = PostgresClient(configuration: try PostgresStorage.configuration(from: url))
    let sessions = try PostgresStorage(client: client, options: .init(table: "sessions"))
    let persist = StrataPersistDriver(sessions)

    let router = Router()
    router.post("/notes/:id") { request, context -> HTTPResponse.Status in
        let text = String(buffer: try await request.body.collect(upTo: 64 * 1024))
        do {
            try await persist.create(key: try context.parameters.require("id"), value: text, expires: .seconds(3600))
        } catch let error as PersistError where error == .duplicate {
            throw HTTPError(.conflict)
        }
        return .created
    }
    // Services stop in reverse order: the server, then expiry, then the storage, then the client.
    let app = Application(
        router: router,
        services: [client, sessions, MaintenanceService(sessions, every: .seconds(60))]
    )
    try await app.runService()
    // snippet end
}
#endif
