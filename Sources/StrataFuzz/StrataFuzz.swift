// A libFuzzer target over the code that parses what Strata reads from disk: a value file's header
// and payload (`DiskRecordHeader`) and a folder's manifest (`DiskManifest`).
//
// Built only on demand, with the fuzzer linked in:
//
//     swift build -c debug --product StrataFuzz --scratch-path .build-fuzz \
//         -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xswiftc -DSTRATA_FUZZ
//     .build-fuzz/debug/StrataFuzz -max_total_time=600 NEW_CORPUS Tests/StrataTests/Fuzz/Corpus
//
// SwiftPM links an executable's `main` to `StrataFuzz_main` (so tests can link executables), which
// shadows libFuzzer's own `main`: `StrataFuzz.main()` hands the command line to libFuzzer's
// `LLVMFuzzerRunDriver` instead (libFuzzer's `main`, linked in all the same, needs
// `LLVMFuzzerTestOneInput` defined). Without `STRATA_FUZZ` (a plain `swift build`), the program
// decodes the files named on its command line and needs no fuzzer runtime.
// `Tests/StrataTests/Disk/DiskFuzzCorpusTests.swift` replays the corpus as an ordinary test.

import Foundation
import Strata

/// Feeds one input to every decoder. Each must return or throw its own error type; a crash, a
/// trap or an address sanitizer report is a finding.
func decodeEverything(_ bytes: UnsafeRawBufferPointer) {
    if let size = try? DiskRecordHeader.requiredSize(forPrefix: bytes), size <= bytes.count {
        _ = try? DiskRecordHeader.decode(bytes)
    }
    if let (header, payload) = try? DiskRecordHeader.decodeRecord(bytes) {
        // A record that decodes has its payload inside the input, of the length its header records.
        precondition(payload.upperBound == bytes.count && payload.lowerBound == header.size)
        precondition(payload.count == header.payloadLength)
    }
    _ = try? DiskManifest.decode(Data(bytes))
}

#if STRATA_FUZZ
/// The function libFuzzer calls with each input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    decodeEverything(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

/// libFuzzer's entry point for a program that has its own `main`.
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

@main
enum StrataFuzz {
    static func main() {
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(runFuzzerDriver(&argc, &argv, fuzzOneInput))
    }
}
#else
@main
enum StrataFuzz {
    static func main() {
        let paths = CommandLine.arguments.dropFirst()
        if paths.isEmpty {
            FileHandle.standardError.write(
                Data(
                    """
                    usage: StrataFuzz FILE...  (decodes each file; build with -DSTRATA_FUZZ to fuzz)

                    """.utf8
                )
            )
            exit(2)
        }
        for path in paths {
            guard let data = FileManager.default.contents(atPath: path) else {
                FileHandle.standardError.write(Data("cannot read \(path)\n".utf8))
                exit(1)
            }
            data.withUnsafeBytes { decodeEverything($0) }
        }
        print("decoded \(paths.count) files")
    }
}
#endif
