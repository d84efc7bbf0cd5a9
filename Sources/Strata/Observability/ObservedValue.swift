public import Observation

/// The value of one key of a storage, kept up to date as the key changes: an `@Observable`
/// object that a SwiftUI view can hold.
///
/// It does nothing until its ``value`` or ``error`` is first read: then it reads the key and
/// follows the storage's ``ObservableStorage/changes(bufferingNewest:)``, reading the key again
/// after each change to it. Released, it stops. So a view may create one on every initialisation,
/// as SwiftUI does with the initial value of a `@State` property, and only the one the view keeps
/// does any work:
///
/// ```swift
/// struct AvatarView: View {
///     @State private var avatar = avatars.observedValue(forKey: "ada")
///     var body: some View {
///         if let data = avatar.value { Image(data: data) } else { ProgressView() }
///     }
/// }
/// ```
///
/// It lives on the main actor, where SwiftUI reads it; the storage is read off it.
@MainActor
public final class ObservedValue<Base: ObservableStorage>: Observable where Base.Key: Equatable {
    /// The key followed.
    public nonisolated let key: Base.Key
    private nonisolated let base: Base
    private let registrar = ObservationRegistrar()
    private var storedValue: Base.Value?
    private var storedError: StorageError?
    private var storedReadCount = 0
    private var task: Task<Void, Never>?

    /// Creates an observed value; ``ObservableStorage/observedValue(forKey:)`` reads better.
    public nonisolated init(_ base: Base, key: Base.Key) {
        self.base = base
        self.key = key
    }

    isolated deinit {
        task?.cancel()
    }

    /// The key's value: `nil` before the first read completes, when there is none, or when the
    /// last read failed (see ``error``). Reading it the first time starts the observation.
    public var value: Base.Value? {
        startIfNeeded()
        registrar.access(self, keyPath: \.value)
        return storedValue
    }

    /// The error of the last read, or `nil` when it succeeded.
    public var error: StorageError? {
        startIfNeeded()
        registrar.access(self, keyPath: \.error)
        return storedError
    }

    /// How many times the key has been read, the first read included: 0 until observation starts.
    public var readCount: Int {
        registrar.access(self, keyPath: \.readCount)
        return storedReadCount
    }

    /// Whether the observation has started.
    public var isObserving: Bool { task != nil }

    private func startIfNeeded() {
        guard task == nil else { return }
        let (base, key) = (base, key)
        // Subscribed before the first read, so no change between the two is missed.
        let changes = base.changes(bufferingNewest: 16)
        task = Task { [weak self] in
            await self?.read(from: base, key: key)
            for await change in changes where change.key == key {
                guard let self else { return }
                await self.read(from: base, key: key)
            }
        }
    }

    private func read(from base: Base, key: Base.Key) async {
        let result: Result<Base.Value?, StorageError>
        do throws(StorageError) {
            result = .success(try await base.value(forKey: key))
        } catch {
            result = .failure(error)
        }
        switch result {
        case .success(let value):
            registrar.withMutation(of: self, keyPath: \.value) { storedValue = value }
            if storedError != nil { registrar.withMutation(of: self, keyPath: \.error) { storedError = nil } }
        case .failure(let error):
            registrar.withMutation(of: self, keyPath: \.error) { storedError = error }
        }
        registrar.withMutation(of: self, keyPath: \.readCount) { storedReadCount += 1 }
    }
}

extension ObservableStorage where Key: Equatable {
    /// An `@Observable` value of `key` that follows its changes from its first read on (see
    /// ``ObservedValue``).
    @MainActor
    public func observedValue(forKey key: Key) -> ObservedValue<Self> {
        ObservedValue(self, key: key)
    }
}
