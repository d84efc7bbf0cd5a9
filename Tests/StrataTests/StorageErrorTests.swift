import Foundation
import Strata
import Testing

/// What a storage of a user's own gets from `StorageError.wrapping` and
/// `StorageError.updateAborted(by:key:storage:)`: any error in, a clear `StorageError` out.
@Suite struct StorageErrorTests {
    struct Refusal: Error {}

    @Test func anErrorOfAnyKindIsKeptAsTheUnderlyingErrorOfTheCodeAsked() {
        let error = StorageError.wrapping(Refusal(), as: .io, key: "k", storage: "MyStorage", message: "cannot read")

        #expect(error.code == .io)
        #expect(error.underlying is Refusal)
        #expect(error.key == "k")
        #expect(error.storage == "MyStorage")
        #expect(error.message == "cannot read")
    }

    @Test func aStorageErrorPassesThroughAndCancellationIsCancelled() {
        let inner = StorageError(.timedOut, key: "inner", storage: "Inner", message: "too slow")

        let passed = StorageError.wrapping(inner, as: .io, key: "outer", storage: "Outer", message: "cannot read")
        let cancelled = StorageError.wrapping(CancellationError(), as: .io, key: "k", storage: "S", message: "m")

        #expect(passed.code == .timedOut)
        #expect(passed.key == "inner")
        #expect(passed.storage == "Inner")
        #expect(cancelled.code == .cancelled)
        #expect(cancelled.underlying == nil)
    }

    @Test func anUpdateWhoseClosureThrewSaysNothingWasWritten() {
        let error = StorageError.updateAborted(by: Refusal(), key: "visits", storage: "MyStorage")
        let cancelled = StorageError.updateAborted(by: CancellationError(), key: "visits", storage: "MyStorage")

        #expect(error.code == .updateAborted)
        #expect(error.underlying is Refusal)
        #expect(error.message.contains("nothing was written"))
        #expect(cancelled.code == .cancelled)
    }

    @Test func everyStorageThrowsTheSameUpdateAbortedError() throws {
        let memory = MemoryStorage<String, Data>()
        memory.set(Data([1]), forKey: "kept")

        let error = #expect(throws: StorageError.self) {
            try memory.update(forKey: "kept") { value in
                value = Data([2])
                throw Refusal()
            }
        }

        #expect(error?.code == .updateAborted)
        #expect(error?.underlying is Refusal)
        #expect(memory.value(forKey: "kept") == Data([1]))
    }
}
