import Foundation

/// Hit ratios (%) of Caffeine 2.6.2 on the real traces in `../shared/traces`, at the cache sizes
/// measured there: the mean of 10 runs (5 for loop), from that folder's REFERENCE.md (how they
/// were measured is written there). `strata-bench hitrate --trace` prints them beside Strata's.
enum CaffeineReference {
    /// Entry counts and Caffeine's hit ratio at each, by trace name (the file name before
    /// `.trace`).
    static let hitRatios: [String: [(size: Int, hitRatio: Double)]] = [
        "cache2k-web07": [(20, 20.87), (50, 27.84), (205, 40.58), (2048, 56.45)],
        "cache2k-web12": [(14, 12.89), (50, 22.82), (138, 36.68), (1376, 70.66)],
        "lirs-2_pools": [(10, 4.25), (50, 24.18), (99, 48.08), (994, 54.38)],
        "lirs-cpp": [(1, 0.15), (12, 11.46), (50, 56.74), (122, 79.59)],
        "lirs-cs": [(1, 1.49), (14, 1.63), (50, 1.65), (141, 8.36)],
        "lirs-gli": [(3, 0.95), (25, 1.06), (250, 14.95), (253, 15.2), (500, 26.95), (1000, 40.58), (2000, 57.13)],
        "lirs-loop": [(1, 0.0), (10, 0.0), (101, 7.79), (256, 24.27), (512, 49.91), (1000, 97.18), (1024, 99.8)],
        "lirs-multi1": [
            (3, 0.42), (26, 16.61), (100, 42.89), (261, 48.32), (500, 55.18), (1000, 68.35), (2000, 83.36),
        ],
        "lirs-multi2": [(6, 2.58), (57, 21.78), (100, 28.96), (500, 50.0), (568, 51.38), (1000, 57.77), (2000, 69.36)],
        "lirs-multi3": [(7, 3.14), (75, 23.47), (100, 25.84), (500, 44.1), (745, 47.7), (1000, 50.48), (2000, 59.0)],
        "lirs-ps": [(3, 2.62), (31, 12.17), (50, 17.34), (308, 51.38)],
        "lirs-scan": [(2, 0.0), (20, 0.0), (50, 0.0), (200, 7.27)],
        "lirs-sprite": [(7, 4.9), (71, 24.36), (100, 31.41), (500, 74.83), (708, 80.5), (1000, 83.58), (2000, 88.88)],
        "lirs-zigzag": [(2, 0.03), (20, 0.66), (50, 1.75), (200, 7.1)],
    ]

    /// The reference of the trace file at `path`, if it is one of the real traces.
    static func sizes(forTraceAt path: String) -> [(size: Int, hitRatio: Double)]? {
        hitRatios[traceName(path)]
    }

    /// `lirs-multi2` for `.../lirs-multi2.trace.gz`, and for its keys printed to `lirs-multi2.keys`.
    static func traceName(_ path: String) -> String {
        let file = URL(fileURLWithPath: path).lastPathComponent
        return String(file.prefix { $0 != "." })
    }
}
