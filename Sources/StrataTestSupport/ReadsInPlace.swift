import _StrataInternals

/// What a test expects of a count of reads made in place: `count` where the platform reads in
/// place (Linux), and 0 elsewhere (Darwin), where the same reads go to the I/O threads and return
/// the same values.
package func inPlace(_ count: Int) -> Int {
    SystemCalls.platformReadsInPlace ? count : 0
}

/// Calls `read` until one of its reads is made in place (`readsInPlace`, read again after each
/// call, goes up), at most `limit` times, and returns the last value read and how many reads were
/// made; one read on a platform that does not read in place.
///
/// A read in place is an offer: it is made only when the kernel can answer it without waiting
/// (and the storage's lock is free), and anything else rightly goes to the I/O threads. In a full
/// parallel run, a read of a file written a moment before has been seen to go there (CI, 265 s
/// into the run, on this machine's sandboxed kernel). A test of where reads are made asks whether
/// reads are made in place at all, not whether the kernel kept every file at every moment.
package func readUntilInPlace<Value>(
    counting readsInPlace: @autoclosure () -> Int,
    limit: Int = 50,
    _ read: () async throws -> Value
) async rethrows -> (value: Value, reads: Int) {
    let before = readsInPlace()
    var reads = 1
    var value = try await read()
    while SystemCalls.platformReadsInPlace, readsInPlace() == before, reads < limit {
        reads += 1
        value = try await read()
    }
    return (value, reads)
}
