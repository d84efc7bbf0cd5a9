/// One change to an ``ObjectStore``: the ID of an object inserted, updated or deleted.
public enum ObjectChange<ID: Hashable & Sendable>: Hashable, Sendable {
    /// An object with this ID was saved where there was none.
    case inserted(ID)
    /// The object with this ID was replaced or updated.
    case updated(ID)
    /// The object with this ID was deleted.
    case deleted(ID)

    /// The ID of the object that changed.
    public var id: ID {
        switch self {
        case .inserted(let id), .updated(let id), .deleted(let id): id
        }
    }
}
