/// A codec's own failure, kept as a ``StorageError``'s ``StorageError/underlying`` error.
public struct CodecError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public var message: String

    /// Creates an error saying `message`.
    public init(message: String) {
        self.message = message
    }

    /// The message.
    public var description: String { message }
}
