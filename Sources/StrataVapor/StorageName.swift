#if Vapor
// Vapor exports a `Storage` struct (what `Application.storage` holds), so in a file that imports
// both Vapor and Strata a plain `Storage` would be ambiguous. A scoped import wins over a whole
// module's, and this one is re-exported: in every file that imports StrataVapor, `Storage` is
// Strata's protocol, and Vapor's struct stays `Vapor.Storage`.
@_exported public import protocol Strata.Storage
#endif
