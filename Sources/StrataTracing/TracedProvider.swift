#if Tracing
public import Strata
public import Tracing

/// A provider that records a `fetch` span for each value it is asked for: made with
/// `traced(as:tracer:)` on any provider.
///
/// Put it where the spans mean something: around the source, each span is a call to it (a
/// cache miss, once coalesced); around the whole chain, each is a request. The span is named
/// `fetch <name>`, is a child of the task's current span, and carries `strata.provider` (the
/// name). IDs and values never reach a span; a failure is recorded with its code only.
///
/// ```swift
/// let products = AnyProvider { (id: String) in try await api.product(id) }
///     .traced(as: "products.api")
///     .cache(memory)
///     .coordinated()
/// ```
///
/// Any task may use it.
public struct TracedProvider<Base: Provider>: Provider {
    public typealias ID = Base.ID
    public typealias Value = Base.Value

    /// The provider whose fetches are traced.
    public let base: Base
    /// The name spans give the provider.
    public let name: String
    /// The tracer, or `nil` for `InstrumentationSystem.tracer` at each fetch.
    public let tracer: (any Tracer)?

    /// Traces `base`'s fetches as `name`, with `tracer` or the bootstrapped one.
    public init(_ base: Base, name: String, tracer: (any Tracer)? = nil) {
        self.base = base
        self.name = name
        self.tracer = tracer
    }

    /// The value for `id`, in a `fetch` span.
    public func value(for id: ID) async throws(StorageError) -> Value {
        let span = startSpan("fetch \(name)", tracer: tracer, attributes: ["strata.provider": name])
        return try await withSpan(span) { () async throws(StorageError) -> Value in try await base.value(for: id) }
    }

    /// The base's immediate answer; a value found at once (in a cache, with no fetch) is a
    /// `fetch` span with `strata.hit` true, and no span is made otherwise.
    public func immediateValue(for id: ID) throws(StorageError) -> ImmediateLookup<Value> {
        let answer = try base.immediateValue(for: id)
        if case .found = answer {
            let span = startSpan("fetch \(name)", tracer: tracer, attributes: ["strata.provider": name])
            span.attributes["strata.hit"] = true
            span.end()
        }
        return answer
    }

    /// The values for `ids`, from one call to the base, in one `fetch` span that counts the IDs
    /// (`strata.ids`).
    public func values(for ids: [ID]) async throws(StorageError) -> [Value] {
        let span = startSpan("fetch \(name)", tracer: tracer, attributes: ["strata.provider": name])
        span.attributes["strata.ids"] = ids.count
        return try await withSpan(span) { () async throws(StorageError) -> [Value] in try await base.values(for: ids) }
    }
}

extension Provider {
    /// This provider, recording a span for each fetch; see ``TracedProvider``.
    ///
    /// - Parameters:
    ///   - name: What spans call the provider; the type's name when `nil`.
    ///   - tracer: The tracer, or `nil` for `InstrumentationSystem.tracer` at each fetch.
    public func traced(as name: String? = nil, tracer: (any Tracer)? = nil) -> TracedProvider<Self> {
        TracedProvider(self, name: name ?? tracedName(of: Self.self), tracer: tracer)
    }
}
#endif
