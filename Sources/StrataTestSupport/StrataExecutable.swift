public import Foundation

/// Finds the `strata` executable the test target depends on: next to the test bundle (the build's
/// products folder, whatever the scratch path), else in the package's `.build/debug`.
public enum StrataExecutable {
    public static func url(filePath: String = #filePath) -> URL? {
        var candidates: [URL] = []
        if let executable = Bundle.main.executableURL {
            candidates.append(executable.resolvingSymlinksInPath().deletingLastPathComponent())
        }
        if let argument = CommandLine.arguments.first {
            candidates.append(URL(fileURLWithPath: argument).resolvingSymlinksInPath().deletingLastPathComponent())
        }
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
            candidates.append(bundle.bundleURL.deletingLastPathComponent())
        }
        var folder = URL(fileURLWithPath: filePath).deletingLastPathComponent()
        while folder.path != "/" {
            if FileManager.default.fileExists(atPath: folder.appendingPathComponent("Package.swift").path) {
                candidates.append(folder.appendingPathComponent(".build/debug"))
                break
            }
            folder.deleteLastPathComponent()
        }
        return candidates.map { $0.appendingPathComponent("strata") }.first {
            FileManager.default.isExecutableFile(atPath: $0.path)
        }
    }
}
