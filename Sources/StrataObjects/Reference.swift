public import Strata
import _StrataInternals

/// A property that refers to another object by its ID alone, resolved through that object's
/// store: SHELF's wish for "`@Reference` resolving to an ID".
///
/// ```swift
/// struct Message: Codable, Identifiable, Sendable {
///     var id = UUID()
///     var author: Reference<User>
///     var replyTo: Reference<Message>?
/// }
/// let author = try await users.object(for: message.author)
/// ```
///
/// It encodes as the bare ID, so the JSON reads `"author": "6273674B-…"`. Delete rules say what
/// happens to referring objects when the target is deleted: see
/// `addDeleteRule(_:for:via:)`.
public struct Reference<Target: Identifiable>: Hashable, Sendable, Codable
where Target.ID: Codable & Sendable {
    /// The ID of the object referred to.
    public var id: Target.ID

    /// Creates a reference to the object with `id`.
    public init(_ id: Target.ID) {
        self.id = id
    }

    /// Creates a reference to `object`.
    public init(to object: Target) {
        self.id = object.id
    }

    /// Decodes a reference from a bare ID.
    public init(from decoder: any Decoder) throws {
        id = try decoder.singleValueContainer().decode(Target.ID.self)
    }

    /// Encodes the reference as a bare ID.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(id)
    }
}

/// A delete rule with its source store erased: the target store keeps a list of these.
struct DeleteRuleEntry: Sendable {
    var rule: DeleteRule
    /// The referring store, held weakly so stores that refer to each other do not leak.
    var source: WeakParticipant
    /// How the rule reads in messages: `Message.author`.
    var path: String
    /// The keys of source objects that refer to any of the target keys.
    var referrers: @Sendable (Set<String>) async throws(StorageError) -> Set<String>
    /// Removes references to the target keys from the source objects with these keys.
    var nullify: @Sendable (Set<String>, Set<String>) async throws(StorageError) -> Void
}

/// A store as seen by a deletion that spans stores.
protocol DeletionParticipant: AnyObject, Sendable {
    var deleteRules: [DeleteRuleEntry] { get }
    var name: String { get }
    func removeForDeletion(keys: Set<String>) async throws(StorageError)
}

final class WeakParticipant: Sendable {
    // Safe: set once at creation, and `weak` loads are atomic.
    nonisolated(unsafe) weak var value: (any DeletionParticipant)?

    init(_ value: any DeletionParticipant) {
        self.value = value
    }
}

extension ObjectStore: DeletionParticipant {
    var deleteRules: [DeleteRuleEntry] { state.withLock { $0.deleteRules } }

    func removeForDeletion(keys: Set<String>) async throws(StorageError) {
        for key in keys {
            try await withStripe(for: key) { () async throws(StorageError) in
                let existing = state.withLock { $0.snapshot?[key]?.object.id }
                guard try await backend.removeRecord(forKey: key) else { return }
                apply(nil, forKey: key)
                if let id = existing ?? (try? keyCoding.id(forKey: key)) { publish(.deleted(id)) }
            }
        }
    }

    /// Resolves `reference` to its object, or `nil` when it no longer exists.
    public func object(for reference: Reference<Object>) async throws(StorageError) -> Object? {
        try await object(withID: reference.id)
    }

    /// Resolves `references` to the objects that still exist, in order.
    public func objects(for references: [Reference<Object>]) async throws(StorageError) -> [Object] {
        try await objects(withIDs: references.map(\.id))
    }

    /// Says what deleting an object of this store does to the objects of `source` that refer to
    /// it through the optional reference at `keyPath`: ``DeleteRule/nullify`` sets it to `nil`,
    /// ``DeleteRule/cascade`` deletes them, ``DeleteRule/deny`` refuses the deletion.
    ///
    /// ```swift
    /// messages.addDeleteRule(.nullify, for: messages, via: \.replyTo)
    /// ```
    ///
    /// Rules are checked for everything a deletion would delete before anything is deleted.
    /// A deletion that spans stores is not one transaction: a crash part-way leaves the objects
    /// not yet visited. Referring objects are nullified and deleted before their target, so no
    /// reference points at a missing object at any point. `source` is held weakly.
    public func addDeleteRule<Source>(
        _ rule: DeleteRule,
        for source: ObjectStore<Source>,
        via keyPath: any WritableKeyPath<Source, Reference<Object>?> & Sendable
    ) {
        addRule(
            rule,
            source: source,
            path: "\(Source.self).\(Self.propertyName(keyPath))",
            references: { $0[keyPath: keyPath].map { [$0.id] } ?? [] },
            removing: { object, _ in object[keyPath: keyPath] = nil }
        )
    }

    /// Says what deleting an object of this store does to the objects of `source` whose array of
    /// references at `keyPath` holds it: ``DeleteRule/nullify`` removes it from the array,
    /// ``DeleteRule/cascade`` deletes them, ``DeleteRule/deny`` refuses the deletion.
    public func addDeleteRule<Source>(
        _ rule: DeleteRule,
        for source: ObjectStore<Source>,
        via keyPath: any WritableKeyPath<Source, [Reference<Object>]> & Sendable
    ) {
        let coding = keyCoding
        addRule(
            rule,
            source: source,
            path: "\(Source.self).\(Self.propertyName(keyPath))",
            references: { $0[keyPath: keyPath].map(\.id) },
            removing: { object, keys in
                object[keyPath: keyPath].removeAll { reference in
                    (try? coding.key(for: reference.id)).map(keys.contains) ?? false
                }
            }
        )
    }

    /// Says what deleting an object of this store does to the objects of `source` that refer to
    /// it through the required reference at `keyPath`: ``DeleteRule/cascade`` deletes them,
    /// ``DeleteRule/deny`` refuses the deletion. A required reference cannot be nullified:
    /// passing ``DeleteRule/nullify`` is a programming error.
    public func addDeleteRule<Source>(
        _ rule: DeleteRule,
        for source: ObjectStore<Source>,
        via keyPath: any KeyPath<Source, Reference<Object>> & Sendable
    ) {
        precondition(rule != .nullify, "a required reference cannot be nullified: make it optional or use .cascade")
        addRule(
            rule,
            source: source,
            path: "\(Source.self).\(Self.propertyName(keyPath))",
            references: { [$0[keyPath: keyPath].id] },
            removing: { _, _ in }
        )
    }

    private static func propertyName(_ keyPath: AnyKeyPath) -> String {
        let text = "\(keyPath)"
        guard let dot = text.lastIndex(of: ".") else { return text }
        return String(text[text.index(after: dot)...])
    }

    private func addRule<Source>(
        _ rule: DeleteRule,
        source: ObjectStore<Source>,
        path: String,
        references: @escaping @Sendable (Source) -> [Object.ID],
        removing: @escaping @Sendable (inout Source, Set<String>) -> Void
    ) {
        let coding = keyCoding
        let weakSource = WeakParticipant(source)
        let entry = DeleteRuleEntry(
            rule: rule,
            source: weakSource,
            path: path,
            referrers: { [weak source] targets throws(StorageError) -> Set<String> in
                guard let source else { return [] }
                var referrers: Set<String> = []
                for (key, entry) in try await source.loadedObjects() {
                    let referred = references(entry.object)
                    if referred.contains(where: { (try? coding.key(for: $0)).map(targets.contains) ?? false }) {
                        referrers.insert(key)
                    }
                }
                return referrers
            },
            nullify: { [weak source] sourceKeys, targets throws(StorageError) in
                guard let source else { return }
                for key in sourceKeys {
                    let id = try source.keyCoding.id(forKey: key)
                    do throws(StorageError) {
                        try await source.update(withID: id) { removing(&$0, targets) }
                    } catch  where error.code == .notFound {
                        continue  // deleted meanwhile: nothing left to nullify
                    }
                }
            }
        )
        state.withLock { $0.deleteRules.append(entry) }
    }

    /// Deletes the objects with `keys`, everything their cascade rules reach, and nullifies what
    /// refers to them, after checking every deny rule.
    func deleteApplyingRules(keys: Set<String>) async throws(StorageError) {
        // Plan: everything the cascade rules reach, in the order found.
        var planned: [ObjectIdentifier: (participant: any DeletionParticipant, keys: Set<String>)] = [
            ObjectIdentifier(self): (self, keys)
        ]
        var order: [ObjectIdentifier] = [ObjectIdentifier(self)]
        var frontier: [(any DeletionParticipant, Set<String>)] = [(self, keys)]
        while let (participant, targetKeys) = frontier.popLast() {
            for rule in participant.deleteRules where rule.rule == .cascade {
                guard let source = rule.source.value else { continue }
                let identity = ObjectIdentifier(source)
                let found = try await rule.referrers(targetKeys).subtracting(planned[identity]?.keys ?? [])
                guard !found.isEmpty else { continue }
                if planned[identity] == nil { order.append(identity) }
                planned[identity, default: (source, [])].keys.formUnion(found)
                frontier.append((source, found))
            }
        }
        // Deny rules: refuse if anything outside the plan still refers to something in it.
        for identity in order {
            guard let (participant, targetKeys) = planned[identity] else { continue }
            for rule in participant.deleteRules where rule.rule == .deny {
                guard let source = rule.source.value else { continue }
                let referrers = try await rule.referrers(targetKeys)
                    .subtracting(planned[ObjectIdentifier(source)]?.keys ?? [])
                if !referrers.isEmpty {
                    throw StorageError(
                        .deleteDenied,
                        key: targetKeys.sorted().first,
                        storage: participant.name,
                        message:
                            "\(referrers.count) object(s) in \(source.name) still refer to it through \(rule.path), whose delete rule is deny; nothing was deleted"
                    )
                }
            }
        }
        // Nullify what refers to the doomed objects and survives, then delete referrers before
        // their targets.
        for identity in order {
            guard let (participant, targetKeys) = planned[identity] else { continue }
            for rule in participant.deleteRules where rule.rule == .nullify {
                guard let source = rule.source.value else { continue }
                let referrers = try await rule.referrers(targetKeys)
                    .subtracting(planned[ObjectIdentifier(source)]?.keys ?? [])
                if !referrers.isEmpty { try await rule.nullify(referrers, targetKeys) }
            }
        }
        for identity in order.reversed() {
            guard let (participant, targetKeys) = planned[identity] else { continue }
            try await participant.removeForDeletion(keys: targetKeys)
        }
    }
}
