import Foundation

/// A child process whose standard output is read line by line and whose standard input takes
/// lines. Any task may use it.
final class LineProcess: Sendable {
    private let process: Process
    private let input: FileHandle
    private let output: FileHandle
    /// The lines the process printed, in order.
    let lines: AsyncStream<String>

    init(executable: URL, arguments: [String]) throws {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let inputPipe = Pipe()
        let outputPipe = Pipe()
        process.standardInput = inputPipe
        process.standardOutput = outputPipe
        let (lines, continuation) = AsyncStream<String>.makeStream()
        let buffer = LineBuffer()
        outputPipe.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            if data.isEmpty {
                handle.readabilityHandler = nil
                continuation.finish()
                return
            }
            for line in buffer.append(data) {
                continuation.yield(line)
            }
        }
        try process.run()
        self.process = process
        self.input = inputPipe.fileHandleForWriting
        self.output = outputPipe.fileHandleForReading
        self.lines = lines
    }

    /// Sends one line to the process.
    func send(_ line: String) {
        input.write(Data((line + "\n").utf8))
    }

    /// Asks the process to end and returns at once: the process quits on its own, and
    /// Foundation reaps it. Waiting here would block the calling thread (a cooperative-pool
    /// thread, in a test), and nothing the tests check comes after the exit.
    func stop() {
        if process.isRunning {
            send("quit")
            try? input.close()
        }
    }
}

/// Splits bytes into lines; only the output handler touches it.
private final class LineBuffer: @unchecked Sendable {
    // Safe: only the pipe's readability handler, which runs one call at a time, uses it.
    private var pending = Data()

    func append(_ data: Data) -> [String] {
        pending.append(data)
        var lines: [String] = []
        while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
            lines.append(String(decoding: pending[pending.startIndex..<newline], as: UTF8.self))
            pending.removeSubrange(pending.startIndex...newline)
        }
        return lines
    }
}
