import Testing

/// Expects `standardError`, what a child process that `#expect(processExitsWith:observing:)` ran
/// with `[\.standardErrorContent]` observed printed there, to hold `message`: the precondition
/// failure of a configuration that can never work names its option and value. `nil` (the child
/// did not exit as expected) fails too.
package func expectStop(
    _ standardError: [UInt8]?,
    saying message: String,
    fileID: String = #fileID,
    filePath: String = #filePath,
    line: Int = #line,
    column: Int = #column
) {
    let printed = standardError.map { String(decoding: $0, as: UTF8.self) } ?? "(the child did not exit as expected)"
    #expect(
        printed.contains(message),
        "standard error: \(printed)",
        sourceLocation: SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
    )
}
