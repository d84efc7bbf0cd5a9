import StrataTestSupport
import Testing

@testable import Strata

@Suite(.onTestThreads) struct FrequencySketchTests {
    @Test func aGrownSketchKeepsEveryEstimate() {
        var sketch = FrequencySketch(counters: 1_024, samplePeriod: 10_000, doorkeeperBitsPerSample: 2)
        var random = SystemRandomNumberGenerator()
        let hashes = (0..<300).map { _ in Int.random(in: .min ... .max, using: &random) }
        for (index, hash) in hashes.enumerated() {
            for _ in 0...(index % 17) { sketch.increment(hash) }
        }
        let before = hashes.map { sketch.frequency(of: $0) }

        var grown = FrequencySketch(counters: 16_384, samplePeriod: 160_000, doorkeeperBitsPerSample: 2)
        grown.takeCounts(of: sketch)

        #expect(hashes.map { grown.frequency(of: $0) } == before)
        #expect(grown.samples == sketch.samples)
        #expect(grown.byteCount > sketch.byteCount)
    }

    @Test func aGrownSketchCountsOnAndHalvesOnItsOwnPeriod() {
        var sketch = FrequencySketch(counters: 512, samplePeriod: 1_000, doorkeeperBitsPerSample: 2)
        for _ in 0..<8 { sketch.increment(42) }
        var grown = FrequencySketch(counters: 4_096, samplePeriod: 8_000, doorkeeperBitsPerSample: 2)
        grown.takeCounts(of: sketch)

        grown.increment(42)
        #expect(grown.frequency(of: 42) == 9)

        // The smaller sketch's period has passed, the grown one's has not: nothing halves yet.
        for key in 0..<1_500 { grown.increment(1_000 + key) }
        #expect(grown.frequency(of: 42) == 9)
    }
}
