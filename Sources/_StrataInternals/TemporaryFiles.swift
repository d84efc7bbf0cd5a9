/// Names of the temporary files a write renames into place, made so that a writer that died
/// mid-write can be told from one still writing, even when process IDs are reused.
///
/// A name holds the writer's process ID and a token drawn once per process (its incarnation):
/// `.tmp-<pid>-<incarnation>-<n>`, or `.tmp-<tag>-<pid>-<incarnation>` for a named file such as
/// a manifest. A file is abandoned when its process no longer exists, or when it carries this
/// process's ID but another incarnation: in a container the app is PID 1 on every run, so a
/// process ID alone would keep an earlier run's leftovers forever. A file of another live
/// process ID is kept, even though that ID may have been reused: removing a live writer's file
/// would fail its write.
package enum TemporaryFiles {
    /// What every temporary file's name starts with.
    package static let prefix = ".tmp-"

    /// This process's incarnation: 16 hex digits, random per process.
    package static let incarnation: String = {
        let digits = String(UInt64.random(in: .min ... .max), radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }()

    /// The name of this process's `counter`th temporary file.
    package static func name(_ counter: UInt64) -> String {
        "\(prefix)\(SystemCalls.currentProcessID)-\(incarnation)-\(counter)"
    }

    /// The name of this process's temporary file for `tag` (a manifest, say).
    package static func name(tag: String) -> String {
        "\(prefix)\(tag)-\(SystemCalls.currentProcessID)-\(incarnation)"
    }

    /// Whether `name` is a temporary file (of `tag`, if given) whose writer no longer runs;
    /// `nil` when `name` is not a temporary file of Strata's at all. Names without an
    /// incarnation, from earlier versions, are judged by their process ID alone.
    package static func isAbandoned(_ name: String, tag: String? = nil) -> Bool? {
        let start = prefix + (tag.map { $0 + "-" } ?? "")
        guard name.hasPrefix(start) else { return nil }
        let fields = name.dropFirst(start.count).split(separator: "-", omittingEmptySubsequences: false)
        // Record files: pid, incarnation, counter (or, earlier, pid and counter); tagged files:
        // pid and incarnation (or, earlier, pid alone).
        let fieldsWithIncarnation = tag == nil ? 3 : 2
        guard fields.count == fieldsWithIncarnation || fields.count == fieldsWithIncarnation - 1,
            fields.allSatisfy({ !$0.isEmpty }),
            let pid = Int32(fields[0]), pid > 0
        else { return nil }
        let writtenBy = fields.count == fieldsWithIncarnation ? String(fields[1]) : nil
        if pid == SystemCalls.currentProcessID {
            // Every file this process writes carries its incarnation.
            return writtenBy != incarnation
        }
        return !SystemCalls.processExists(pid)
    }

    /// Removes `name` from `folder` when it is a temporary file (of `tag`, if given) whose writer
    /// no longer runs. A name that is not Strata's (perhaps a later version's, still writing) and
    /// the file of a live process stay. One that cannot be removed (a read-only folder) does no
    /// harm: readers never take a temporary file for a record.
    package static func removeIfAbandoned(_ name: String, in folder: String, tag: String? = nil) {
        guard isAbandoned(name, tag: tag) == true else { return }
        _ = try? SystemCalls.remove(folder + "/" + name)
    }
}
