#if Tracing
import Strata
import Tracing

/// What a span records of a failure: the code and the storage, never the key.
public struct TracedFailure: Error, Sendable, CustomStringConvertible {
    /// The `StorageError/Code` name, such as `io`.
    public var code: String
    /// The storage that failed.
    public var storage: String

    public var description: String { "StorageError \(code) in \(storage)" }
}

/// Starts a client span named `name` under the task's current span, with `tracer` or the
/// bootstrapped one, and gives it `attributes`.
func startSpan(_ name: String, tracer: (any Tracer)?, attributes: [String: String]) -> any Span {
    let tracer = tracer ?? InstrumentationSystem.tracer
    let span = tracer.startSpan(name, context: ServiceContext.current ?? .topLevel, ofKind: .client)
    for (key, value) in attributes { span.attributes[key] = value }
    return span
}

/// Records `error` on `span` by its code and storage only: its message may name a key.
func recordFailure(_ error: StorageError, on span: any Span) {
    span.recordError(TracedFailure(code: error.code.name, storage: error.storage))
    span.setStatus(SpanStatus(code: .error, message: "StorageError.\(error.code)"))
}

/// Runs `body` inside `span`, which becomes the task's current span meanwhile, then ends it;
/// `describe` adds attributes from the result, and a failure is recorded by its code.
func withSpan<Result>(
    _ span: any Span,
    describe: (Result, any Span) -> Void = { _, _ in },
    _ body: () async throws(StorageError) -> Result
) async throws(StorageError) -> Result {
    defer { span.end() }
    // Through a `Result`: the task-local's `withValue` rethrows untyped errors.
    let outcome: Swift.Result<Result, StorageError> = await ServiceContext.$current.withValue(span.context) {
        do throws(StorageError) {
            return .success(try await body())
        } catch {
            return .failure(error)
        }
    }
    switch outcome {
    case .success(let result):
        describe(result, span)
        return result
    case .failure(let error):
        recordFailure(error, on: span)
        throw error
    }
}

/// The type's name without generic arguments, as spans name a storage or provider by default.
func tracedName(of type: Any.Type) -> String {
    let name = String(describing: type)
    return name.firstIndex(of: "<").map { String(name[..<$0]) } ?? name
}
#endif
