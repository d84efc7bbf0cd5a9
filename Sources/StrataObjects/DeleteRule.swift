/// What happens to an object that refers to a deleted object, chosen per reference with
/// `addDeleteRule(_:for:via:)`.
public enum DeleteRule: Sendable, Hashable {
    /// The reference is removed: an optional reference becomes `nil`, an array of references
    /// loses it. The referring object stays.
    case nullify
    /// The referring object is deleted too (and its own rules apply in turn).
    case cascade
    /// The deletion is refused with `StorageError.Code.deleteDenied` while any object refers
    /// to the target; nothing is deleted.
    case deny
}
