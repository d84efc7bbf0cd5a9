import Dispatch
import StrataTestSupport
import Testing
import _StrataInternals

@testable import Strata

/// `bothAtOnce`, which opening a large folder uses to list folders and build its tables on two
/// threads: both halves run at the same time, each result comes back to its place, and what a
/// half wrote is visible after the call.
@Suite(.onTestThreads) struct BothAtOnceTests {
    @Test func theHalvesRunAtTheSameTime() {
        // The first half waits for a signal only the second half sends: run one after the other,
        // the first would time out.
        let signal = DispatchSemaphore(value: 0)
        let (waited, sent) = bothAtOnce(
            { signal.wait(timeout: .now() + 10) == .success },
            { () -> Bool in
                signal.signal()
                return true
            }
        )
        #expect(waited)
        #expect(sent)
    }

    @Test func eachResultComesBackInItsPlaceWithWhatItsHalfBuilt() {
        let (squares, words) = bothAtOnce(
            { (0..<10_000).map { $0 * $0 } },
            { Dictionary(uniqueKeysWithValues: (0..<10_000).map { ("key-\($0)", $0) }) }
        )
        #expect(squares.count == 10_000)
        #expect(squares[9_999] == 9_999 * 9_999)
        #expect(words.count == 10_000)
        #expect(words["key-4321"] == 4321)
    }
}
