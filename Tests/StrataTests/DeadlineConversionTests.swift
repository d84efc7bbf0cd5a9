import Dispatch
import Testing
import _StrataInternals

/// A deadline's length reaches Dispatch in whole nanoseconds without passing through `Int`, which
/// is 32 bits on arm64_32 (watchOS): there, any limit past 2^31 ns (about 2.1 s) once fired early.
@Suite struct DeadlineConversionTests {
    @Test(arguments: [
        (Duration.seconds(3), UInt64(3_000_000_000)),
        (.seconds(30), 30_000_000_000),
        (.milliseconds(2_147_484), 2_147_484_000_000),
        (.nanoseconds(Int64(Int32.max) + 1), UInt64(Int32.max) + 1),
        (.seconds(86_400 * 365), 31_536_000_000_000_000),
        (.nanoseconds(1), 1),
        (.zero, 0),
        (.seconds(-5), 0),
        (.nanoseconds(-1), 0),
    ])
    func limitsPast32BitNanosecondsKeepTheirLength(limit: Duration, nanoseconds: UInt64) {
        #expect(Deadline.nanoseconds(in: limit) == nanoseconds)
    }

    @Test func aLimitTooLongToCountSaturates() {
        #expect(Deadline.nanoseconds(in: .seconds(Int64.max)) == .max)
        #expect(Deadline.dispatchTime(after: .seconds(Int64.max), from: .now()) == .distantFuture)
    }

    @Test func theDispatchTimeIsTheLimitAfterNow() {
        let now = DispatchTime(uptimeNanoseconds: 1_000)

        let due = Deadline.dispatchTime(after: .seconds(30), from: now)

        #expect(due.uptimeNanoseconds == 30_000_001_000)
    }
}
