import Foundation
import HTTPTypes
import Strata
import StrataHTTP

// The README's HTTP block, which "Getting started in an app" (Strata.docc) shows too, and that
// article's private cache, each between `// snippet: name` and `// snippet end`; StrataTests'
// ReadmeTests checks that the documents show exactly these lines. Compiled, not run: they
// download.

/// The README's image example: an ID that knows its URL and a file name.
struct ImageID: Hashable, Sendable {
    var name: String
    var url: URL
}

func readmeProviderChain(folder: URL, id: ImageID) async throws {
    // snippet: providers
    let images = HTTPSource(timeout: .seconds(5), maximumBodyByteCount: 1_048_576)
        .mapIDs { (id: ImageID) in id.url }  // the network source wants URLs
        .mapValues { data, _ in
            guard data.starts(with: [0x89, 0x50, 0x4E, 0x47]) else {  // validate: never cache a bad download
                throw CocoaError(.fileReadCorruptFile)
            }
            return data
        }
        .retrying(maximumAttemptCount: 3)  // exponential backoff with jitter
        .cache(try DiskStorage(url: folder).mapKeys { (id: ImageID) in id.name })  // survives a restart
        .cache(MemoryStorage<ImageID, Data>())  // or WeakObjectCache: objects in use are free
        .coordinated()  // one download per image at a time

    let png = try await images.value(for: id)
    // snippet end
    _ = png
}

func readmePrivateCache(records: some Storage<URL, HTTPCacheRecord>, token: String) -> some Provider<URL, Data> {
    // snippet: http-private-cache
    let mine = HTTPSource(headers: [.authorization: "Bearer \(token)"])
        .cache(in: records, policy: HTTPCachePolicy(sharing: .private, staleIfError: .seconds(86_400)))
    // snippet end
    return mine
}
