/// A provider made from a closure, or any provider with its type erased.
///
/// Made from a closure, it is the source at the root of a chain:
///
/// ```swift
/// let avatars = AnyProvider { (url: URL) in try await download(url) }
/// ```
///
/// Made from a provider, it hides the chain's type, to keep the chain in a property or put a
/// mock in its place in a test; ``Provider/eraseToAnyProvider()`` does the same.
///
/// Any task may use it; a closure must be safe to call concurrently.
public struct AnyProvider<ID: Sendable, Value: Sendable>: Provider {
    @usableFromInline
    enum Base: Sendable {
        case source(@Sendable (ID) async throws -> Value, name: String)
        case provider(any Provider<ID, Value>)
    }

    @usableFromInline let base: Base

    /// Creates a provider that calls `source`. An error it throws (other than a
    /// ``StorageError``) is wrapped as ``StorageError/Code/sourceFailed``.
    ///
    /// - Parameters:
    ///   - name: Names the source in errors.
    ///   - source: Fetches the value for an ID; called concurrently.
    public init(name: String = "Provider", _ source: @escaping @Sendable (ID) async throws -> Value) {
        base = .source(source, name: name)
    }

    /// Wraps `base`, hiding its type; an `AnyProvider` is not wrapped twice.
    public init(_ base: some Provider<ID, Value>) {
        if let erased = base as? AnyProvider<ID, Value> {
            self = erased
        } else {
            self.base = .provider(base)
        }
    }

    /// Returns the value for `id`, or throws why there is none.
    @inlinable
    public func value(for id: ID) async throws(StorageError) -> Value {
        switch base {
        case .source(let source, let name):
            do {
                return try await source(id)
            } catch {
                throw StorageError.sourceFailed(error, id: id, provider: name)
            }
        case .provider(let provider):
            return try await provider.value(for: id)
        }
    }

    /// Asks the wrapped provider for an answer without suspending; a closure's answer always
    /// needs a suspension.
    @inlinable
    public func immediateValue(for id: ID) throws(StorageError) -> ImmediateLookup<Value> {
        switch base {
        case .source: .unavailable
        case .provider(let provider): try provider.immediateValue(for: id)
        }
    }

    /// Returns the values for `ids`: the wrapped provider's, in one call to it, or the closure's,
    /// one call for each ID, one after another.
    @inlinable
    public func values(for ids: [ID]) async throws(StorageError) -> [Value] {
        guard case .provider(let provider) = base else {
            var values: [Value] = []
            values.reserveCapacity(ids.count)
            for id in ids {
                values.append(try await value(for: id))
            }
            return values
        }
        return try await provider.values(for: ids)
    }
}

extension Provider {
    /// Erases the provider's type: `AnyProvider(self)`.
    public func eraseToAnyProvider() -> AnyProvider<ID, Value> {
        AnyProvider(self)
    }
}
