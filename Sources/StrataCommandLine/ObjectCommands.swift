import ArgumentParser
import Foundation
import Strata
import StrataObjects

/// `strata objects …`: look into an object store folder without knowing its Swift types.
struct ObjectsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "objects",
        abstract: "List, show, query and remove the objects of an ObjectStore folder.",
        subcommands: [
            ObjectsListCommand.self, ObjectsShowCommand.self, ObjectsQueryCommand.self, ObjectsRemoveCommand.self,
        ]
    )
}

/// The folder option the object commands share.
struct ObjectFolderOptions: ParsableArguments {
    @Option(name: .long, help: "The object store folder (the one holding strata-objects.json).")
    var folder: String

    /// Opens an existing store folder; never creates one.
    func open() throws -> ObjectFolder {
        let url = URL(fileURLWithPath: folder)
        let configuration = url.appendingPathComponent(ObjectFolder.configurationFileName).path
        guard FileManager.default.fileExists(atPath: configuration) else {
            throw ValidationError("\(folder) is not an object store: it has no \(ObjectFolder.configurationFileName)")
        }
        return try ObjectFolder(url: url)
    }
}

/// One stored object read as JSON, with its key.
struct StoredJSON {
    var key: String
    var value: JSONValue
    var byteCount: Int

    /// Every object in `folder`; unreadable ones are reported on standard error and skipped.
    static func all(in folder: ObjectFolder) throws -> [StoredJSON] {
        var objects: [StoredJSON] = []
        for record in try folder.records() {
            switch record.data {
            case .success(let data):
                do {
                    objects.append(
                        StoredJSON(
                            key: record.key,
                            value: try JSONDecoder().decode(JSONValue.self, from: data),
                            byteCount: data.count
                        )
                    )
                } catch {
                    printError("unreadable object '\(record.key)' in \(folder.location(forKey: record.key)): \(error)")
                }
            case .failure(let error):
                printError("\(error)")
            }
        }
        return objects
    }
}

extension JSONValue {
    /// The value at a dotted path such as `author.name`, or `nil`.
    func value(at path: String) -> JSONValue? {
        var current: JSONValue = self
        for component in path.split(separator: ".") {
            switch current {
            case .object(let members):
                guard let next = members[String(component)] else { return nil }
                current = next
            case .array(let elements):
                guard let index = Int(component), elements.indices.contains(index) else { return nil }
                current = elements[index]
            default:
                return nil
            }
        }
        return current
    }

    /// The value as compact JSON text.
    var jsonText: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "null"
    }

    /// Orders two values of the same kind; `nil` when they cannot be compared.
    static func order(_ left: JSONValue, _ right: JSONValue) -> ComparisonResult? {
        switch (left, right) {
        case (.number(let a), .number(let b)): a < b ? .orderedAscending : a > b ? .orderedDescending : .orderedSame
        case (.string(let a), .string(let b)): a < b ? .orderedAscending : a > b ? .orderedDescending : .orderedSame
        case (.bool(let a), .bool(let b)): a == b ? .orderedSame : (!a ? .orderedAscending : .orderedDescending)
        default: nil
        }
    }
}

struct ObjectsListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "ls", abstract: "List object IDs with their sizes.")

    @OptionGroup var options: ObjectFolderOptions

    func run() throws {
        let folder = try options.open()
        var total = 0
        let records = try folder.records().sorted { $0.key < $1.key }
        for record in records {
            switch record.data {
            case .success(let data):
                total += data.count
                print("\(formatBytes(data.count).padding(toLength: 10, withPad: " ", startingAt: 0)) \(record.key)")
            case .failure(let error):
                print("unreadable   \(record.key): \(error.message)")
            }
        }
        print("\(records.count) objects, \(formatBytes(total))")
    }
}

struct ObjectsShowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Print an object's JSON and list its attachments."
    )

    @OptionGroup var options: ObjectFolderOptions
    @Argument(help: "The object's ID, as `ls` prints it.") var id: String

    func run() throws {
        let folder = try options.open()
        guard let data = try folder.record(forKey: id) else {
            printError("no object with ID '\(id)' in \(options.folder)")
            throw ExitCode(1)
        }
        FileHandle.standardOutput.write(data)
        if data.last != UInt8(ascii: "\n") { print() }
        let attachments = try folder.attachmentNames(forKey: id).sorted()
        for name in attachments {
            let size = try folder.attachment(named: name, forKey: id)?.count ?? 0
            print("attachment \(name) (\(formatBytes(size)))")
        }
    }
}

struct ObjectsQueryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query",
        abstract: "Print the objects that match, one JSON object per line.",
        discussion: """
            Conditions combine with AND. Paths are dotted property names (author.name, tags.0).
              --where PATH=VALUE      equal; VALUE is read as JSON when it parses (42, true, null, "x"), else as text
              --contains PATH=TEXT    the string contains TEXT, or the array holds the element TEXT
              --sort PATH[:desc]      sort by PATH (repeat to sort by several)
            """
    )

    @OptionGroup var options: ObjectFolderOptions
    @Option(name: .customLong("where"), help: "PATH=VALUE: keep objects whose PATH equals VALUE.")
    var equalities: [String] = []
    @Option(name: .customLong("contains"), help: "PATH=TEXT: keep objects whose PATH contains TEXT.")
    var containments: [String] = []
    @Option(name: .customLong("sort"), help: "PATH or PATH:desc.") var sorts: [String] = []
    @Option(help: "Print at most this many objects.") var limit: Int?

    func run() throws {
        let equalities = try self.equalities.map { try Self.split($0) }
        let containments = try self.containments.map { try Self.split($0) }
        var matches = try StoredJSON.all(in: options.open()).filter { object in
            for (path, text) in equalities {
                let expected = (try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))) ?? .string(text)
                guard let actual = object.value.value(at: path) else { return false }
                if actual != expected, actual != .string(text) { return false }
            }
            for (path, text) in containments {
                switch object.value.value(at: path) {
                case .string(let string): if !string.contains(text) { return false }
                case .array(let elements):
                    let element = (try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))) ?? .string(text)
                    if !elements.contains(element), !elements.contains(.string(text)) { return false }
                default: return false
                }
            }
            return true
        }
        let order = sorts.map { sort -> (path: String, descending: Bool) in
            sort.hasSuffix(":desc") ? (String(sort.dropLast(5)), true) : (sort, false)
        }
        matches.sort { left, right in
            for (path, descending) in order {
                let a = left.value.value(at: path) ?? .null
                let b = right.value.value(at: path) ?? .null
                guard let result = JSONValue.order(a, b), result != .orderedSame else { continue }
                return (result == .orderedAscending) != descending
            }
            return left.key < right.key
        }
        for object in matches.prefix(limit ?? .max) { print(object.value.jsonText) }
    }

    private static func split(_ condition: String) throws -> (String, String) {
        guard let equals = condition.firstIndex(of: "="), equals != condition.startIndex else {
            throw ValidationError("'\(condition)' is not PATH=VALUE")
        }
        return (String(condition[..<equals]), String(condition[condition.index(after: equals)...]))
    }
}

struct ObjectsRemoveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rm",
        abstract: "Remove objects and their attachments by ID.",
        discussion: "Delete rules are declared in Swift and not applied here: references to a removed object remain."
    )

    @OptionGroup var options: ObjectFolderOptions
    @Argument(help: "The IDs to remove.") var ids: [String]

    func run() throws {
        let folder = try options.open()
        var missing = 0
        for id in ids {
            if try folder.removeRecord(forKey: id) {
                print("removed \(id)")
            } else {
                printError("no object with ID '\(id)'")
                missing += 1
            }
        }
        if missing > 0 { throw ExitCode(1) }
    }
}
