public import Strata

/// The first `count` elements of `stream`, or fewer if none comes for ten seconds: how the tests
/// read a storage's `changes()` and `removals()`.
public func firstElements<Element: Sendable>(_ count: Int, of stream: AsyncStream<Element>) async -> [Element] {
    await withTaskGroup(of: [Element].self) { group in
        group.addTask {
            var collected: [Element] = []
            for await element in stream {
                collected.append(element)
                if collected.count == count { break }
            }
            return collected
        }
        group.addTask {
            try? await Task.sleep(for: .seconds(10))
            return []
        }
        let collected = await group.next() ?? []
        group.cancelAll()
        return collected
    }
}

/// The first `count` changes of `stream`, each as "key kind" ("a set"), or fewer if none comes
/// for ten seconds.
public func firstChanges(_ count: Int, of stream: AsyncStream<StorageChange<String>>) async -> [String] {
    await firstElements(count, of: stream).map { "\($0.key) \($0.kind)" }
}
