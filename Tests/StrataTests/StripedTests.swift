import Testing
import _StrataInternals

/// The one striping rule: a key always falls in the same stripe, the one `Striping` names, keys
/// spread over every stripe, and `all` lists each stripe once, in order.
struct StripedTests {
    private final class Stripe: Sendable {
        let number: Int
        init(_ number: Int) { self.number = number }
    }

    @Test func aKeyAlwaysFallsInTheStripeStripingNamesAndKeysReachEveryStripe() {
        var made = 0
        let striped = Striped(count: 16) {
            defer { made += 1 }
            return Stripe(made)
        }
        var reached: Set<Int> = []
        for key in (0..<1_000).map({ "key \($0)" }) {
            let stripe = striped[key: key]
            #expect(stripe === striped[key: key])
            #expect(stripe.number == Striping.index(of: key, count: 16))
            reached.insert(stripe.number)
        }
        #expect(reached == Set(0..<16))
        #expect(striped.all.map(\.number) == Array(0..<16))
    }

    @Test func aHashPicksItsStripeByRemainderAndANegativeHashStaysInRange() {
        let striped = Striped(count: 64) { Stripe(0) }
        #expect(Striping.index(ofHash: 130, count: 64) == 2)
        #expect((0..<64).contains(Striping.index(ofHash: -1, count: 64)))
        #expect(Striping.index(ofHash: Int.min, count: 64) == 0)
        #expect(striped[hash: 130] === striped.all[2])
    }
}
