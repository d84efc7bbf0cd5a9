package import Foundation
public import Strata

extension StorageError.Code {
    /// An object stored at an earlier schema version could not be brought to the current one (a
    /// migration step threw or its output did not decode), or was written by a newer version of
    /// its type. The stored object was left as it was.
    public static let migrationFailed = StorageError.Code("migrationFailed")
}

/// A type an ``ObjectStore`` keeps at a schema version, with the steps that bring objects stored
/// at earlier versions up to it: SwiftData's `VersionedSchema` and `SchemaMigrationPlan`, for one
/// type.
///
/// ```swift
/// struct NoteV1: Codable {
///     var id: UUID
///     var text: String
/// }
///
/// struct Note: VersionedObject, Identifiable, Sendable {
///     static let schemaVersion = 2
///     static let migrations = ObjectMigrations<Note>()
///         .migrating(from: 1, as: NoteV1.self) { old in Note(id: old.id, body: old.text, isPinned: false) }
///
///     var id: UUID
///     var body: String
///     var isPinned: Bool
/// }
/// ```
///
/// Every object the store writes carries its version in the JSON key `"$schemaVersion"`; an
/// object without one was written before its type declared versions and is version 1. A read
/// of an older object runs the steps from its version up, once, in memory (it decodes the JSON
/// once when the first step is typed); ``ObjectStore/migrate(progress:)`` rewrites every older
/// object at the current version, so later reads and the database backends' indexes see the new
/// shape. The type must encode as a JSON object (a keyed container), as synthesized `Codable`
/// conformances do.
public protocol VersionedObject: Codable {
    /// The version objects of this type are written at: 1 for the first, one more for each
    /// change of shape.
    static var schemaVersion: Int { get }
    /// How objects stored at each earlier version become objects of the next one.
    static var migrations: ObjectMigrations<Self> { get }
}

/// The steps that bring an object stored at an older schema version to the current one: one
/// step from each version below ``VersionedObject/schemaVersion``, each either typed (decode the
/// old version's type, return the next version's value) or a transform of the object's JSON.
///
/// A chain from version 1 to 3 runs the step from 1, then the step from 2. A typed step's output
/// goes to the next step as it is when the next step reads that type; otherwise it is encoded as
/// JSON and decoded as what the next step (or the current type) reads.
public struct ObjectMigrations<Object: Codable>: Sendable {
    struct Step: Sendable {
        /// What the step reads, for error messages: a type's name or "its JSON".
        var reads: String
        var run: @Sendable (MigrationStage) throws -> MigrationStage
    }

    private(set) var steps: [Int: Step] = [:]
    /// Versions given more than one step, reported by ``check(currentVersion:)``.
    private var repeatedVersions: [Int] = []

    /// Creates a plan with no steps, for a type at version 1.
    public init() {}

    /// Adds the step from `version` to the next: objects stored at `version` are decoded as `Old`
    /// and `migrate` returns the next version's value (the current type's, for the last step).
    /// Throwing from `migrate` fails the read with `StorageError.Code.migrationFailed` and leaves
    /// the stored object as it was.
    public func migrating<Old: Decodable, New: Encodable>(
        from version: Int,
        as old: Old.Type,
        _ migrate: @escaping @Sendable (Old) throws -> New
    ) -> Self where Old: SendableMetatype, New: SendableMetatype {
        adding(Step(reads: "\(Old.self)") { stage in .value(try migrate(try stage.decode(Old.self))) }, from: version)
    }

    /// Adds the step from `version` to the next as a change of the object's JSON: renaming a key,
    /// filling a new field, dropping an old one. Numbers are `Double`s here (integers beyond 2⁵³
    /// lose precision); use a typed step for those.
    ///
    /// ```swift
    /// .migratingJSON(from: 2) { object in
    ///     object["title"] = object.removeValue(forKey: "name")
    ///     object["tags"] = object["tags"] ?? []
    /// }
    /// ```
    public func migratingJSON(
        from version: Int,
        _ migrate: @escaping @Sendable (inout [String: JSONValue]) throws -> Void
    ) -> Self {
        adding(
            Step(reads: "its JSON") { stage in
                guard case .object(var object) = try stage.decode(JSONValue.self) else {
                    throw MigrationStepFailure.notAnObject
                }
                try migrate(&object)
                return .json(.object(object))
            },
            from: version
        )
    }

    private func adding(_ step: Step, from version: Int) -> Self {
        var plan = self
        if plan.steps[version] != nil { plan.repeatedVersions.append(version) }
        plan.steps[version] = step
        return plan
    }

    /// Why this plan cannot bring every version below `currentVersion` up to it, or `nil` when it
    /// can.
    func problem(currentVersion: Int) -> String? {
        guard currentVersion >= 1 else { return "its schemaVersion is \(currentVersion); versions start at 1" }
        if let version = repeatedVersions.first { return "it has two migrations from version \(version)" }
        if let missing = (1..<currentVersion).first(where: { steps[$0] == nil }) {
            return "it has no migration from version \(missing) (its schemaVersion is \(currentVersion))"
        }
        if let extra = steps.keys.sorted().first(where: { $0 < 1 || $0 >= currentVersion }) {
            return "it has a migration from version \(extra), which is not below its schemaVersion \(currentVersion)"
        }
        return nil
    }
}

/// Where an object is on its way through a chain of migration steps.
enum MigrationStage {
    /// Not decoded yet: the decoder of the stored JSON, so the first step decodes it only once.
    case decoder(any Decoder)
    /// The output of a typed step.
    case value(any Encodable)
    /// The output of a JSON step.
    case json(JSONValue)

    /// This stage as `T`: decoded from the stored JSON, passed on as it is, or converted through JSON.
    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        switch self {
        case .decoder(let decoder):
            return try T(from: decoder)
        case .value(let value):
            if let value = value as? T { return value }
            return try JSONDecoder().decode(T.self, from: JSONEncoder().encode(value))
        case .json(let json):
            return try JSONDecoder().decode(T.self, from: JSONEncoder().encode(json))
        }
    }
}

enum MigrationStepFailure: Error, CustomStringConvertible {
    case notAnObject

    var description: String { "the stored object is not a JSON object" }
}

/// Why a versioned object could not be read, before the store adds its key and location.
struct MigrationFailure: Error {
    /// The version the object was stored at.
    var storedVersion: Int
    var currentVersion: Int
    /// What went wrong, for the message.
    var reason: String
    var underlying: (any Error)?
}

/// The key that carries an object's schema version in its JSON.
struct SchemaVersionKey: CodingKey {
    static let version = SchemaVersionKey(stringValue: "$schemaVersion")

    var stringValue: String
    var intValue: Int? { nil }

    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// A versioned object as it is read: decoded at the current version, or migrated up to it from the
/// version it was stored at.
struct VersionedReading<Object: VersionedObject>: Decodable {
    var object: Object
    /// The version the object was stored at.
    var storedVersion: Int

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: SchemaVersionKey.self)
        storedVersion = try container.decodeIfPresent(Int.self, forKey: .version) ?? 1
        let current = Object.schemaVersion
        if storedVersion == current {
            object = try Object(from: decoder)
            return
        }
        guard storedVersion >= 1 else {
            throw MigrationFailure(
                storedVersion: storedVersion,
                currentVersion: current,
                reason: "its stored version is not one \(Object.self) ever had; versions start at 1"
            )
        }
        guard storedVersion < current else {
            throw MigrationFailure(
                storedVersion: storedVersion,
                currentVersion: current,
                reason: "it was written by a newer version of \(Object.self), which this one (\(current)) cannot read"
            )
        }
        let plan = Object.migrations
        if let problem = plan.problem(currentVersion: current) {
            throw MigrationFailure(
                storedVersion: storedVersion,
                currentVersion: current,
                reason: "the migrations of \(Object.self) are incomplete: \(problem)"
            )
        }
        var stage = MigrationStage.decoder(decoder)
        for version in storedVersion..<current {
            // problem(currentVersion:) returned nil, so every version below current has a step.
            guard let step = plan.steps[version] else { break }
            do {
                stage = try step.run(stage)
            } catch {
                throw MigrationFailure(
                    storedVersion: storedVersion,
                    currentVersion: current,
                    reason: "the migration from version \(version), which reads \(step.reads), failed: \(error)",
                    underlying: error
                )
            }
        }
        do {
            object = try stage.decode(Object.self)
        } catch {
            throw MigrationFailure(
                storedVersion: storedVersion,
                currentVersion: current,
                reason: "the last migration's output does not decode as \(Object.self): \(error)",
                underlying: error
            )
        }
    }
}

/// A versioned object as it is written: its own keys and `"$schemaVersion"`.
struct VersionedWriting<Object: VersionedObject>: Encodable {
    var object: Object

    func encode(to encoder: any Encoder) throws {
        try object.encode(to: encoder)
        var container = encoder.container(keyedBy: SchemaVersionKey.self)
        try container.encode(Object.schemaVersion, forKey: .version)
    }
}

extension VersionedObject {
    /// Decodes `data` as `T` (which is `Self`), migrating it when it was stored at an older version;
    /// returns the version it was stored at too. Called through `any VersionedObject.Type` by code
    /// generic over any `Decodable`.
    static func decodeVersioned<T>(_ data: Data, as type: T.Type) throws -> (object: T, storedVersion: Int) {
        let reading = try JSONDecoder().decode(VersionedReading<Self>.self, from: data)
        // T is Self: the caller found this conformance by casting T.self.
        guard let object = reading.object as? T else { preconditionFailure("\(T.self) is not \(Self.self)") }
        return (object, reading.storedVersion)
    }

    /// Encodes `object` (a `Self`) with the schema version.
    static func encodeVersioned(_ object: Any, with encoder: JSONEncoder) throws -> Data {
        guard let object = object as? Self else { preconditionFailure("\(type(of: object)) is not \(Self.self)") }
        return try encoder.encode(VersionedWriting(object: object))
    }
}

/// Reads and writes objects as JSON, with their schema version when their type has one.
package struct ObjectCoding<Object: Decodable>: Sendable {
    /// `Object` as a versioned type, or `nil` when it declares no version.
    nonisolated(unsafe) private let versioned: (any VersionedObject.Type)?

    package init() {
        versioned = Object.self as? any VersionedObject.Type
    }

    /// The version objects are written at; `nil` for a type that declares none.
    package var currentVersion: Int? { versioned?.schemaVersion }

    /// Decodes `data`, migrating it when it was stored at an older version. Returns the version
    /// it was stored at (`nil` for a type without versions).
    package func decode(_ data: Data) throws -> (object: Object, storedVersion: Int?) {
        guard let versioned else { return (try JSONDecoder().decode(Object.self, from: data), nil) }
        let (object, version) = try versioned.decodeVersioned(data, as: Object.self)
        return (object, version)
    }
}

extension ObjectCoding where Object: Encodable {
    /// Encodes `object` with `encoder`, adding its schema version when its type has one.
    package func encode(_ object: Object, with encoder: JSONEncoder) throws -> Data {
        guard let versioned else { return try encoder.encode(object) }
        return try versioned.encodeVersioned(object, with: encoder)
    }
}

/// How far ``ObjectStore/migrate(progress:)`` has come.
public struct MigrationProgress: Sendable, Hashable {
    /// The objects looked at so far.
    public var completed: Int
    /// The objects there are to look at.
    public var total: Int
    /// How many of those looked at were rewritten at the current version.
    public var migrated: Int

    /// Creates a progress report.
    public init(completed: Int, total: Int, migrated: Int) {
        self.completed = completed
        self.total = total
        self.migrated = migrated
    }
}

/// What ``ObjectStore/migrate(progress:)`` did.
public struct MigrationReport: Sendable, Hashable {
    /// The objects rewritten at the current version.
    public var migrated: Int
    /// The objects that were already at it.
    public var alreadyCurrent: Int

    /// Creates a report.
    public init(migrated: Int, alreadyCurrent: Int) {
        self.migrated = migrated
        self.alreadyCurrent = alreadyCurrent
    }
}
