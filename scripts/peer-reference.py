#!/usr/bin/env python3
"""Writes Sources/strata-bench/PeerReference.swift: the hit ratios of Caffeine 2.6.2 and theine
2.0.0 that `strata-bench hitrate` prints beside Strata's.

    scripts/peer-reference.py ../shared/traces/REFERENCE.md docs/hitrate-reference \
        | swift format - > Sources/strata-bench/PeerReference.swift

The real traces' figures come from REFERENCE.md's tables. The synthetic traces' come from
docs/hitrate-reference, where scripts/measure-peers.sh left, for each trace NAME (and each loop
NAME-SIZE), NAME.caffeine (the output of ../shared/traces/tools/HitRate.java, 10 runs) and
NAME.theine (that of peers.py, 3 runs), measured on the keys `strata-bench hitrate --print-keys
NAME` prints.
"""
import glob, os, re, sys

def real(path):
    refs, current = {}, None
    for line in open(path):
        match = re.match(r"\*\*([\w\-]+)\*\*:", line)
        if match:
            current = match.group(1)
            refs[current] = []
        elif current and line.startswith("| ") and not line.startswith("| size"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            size = int(re.sub(r"\(.*\)|[ ,]", "", cells[0]))
            refs[current].append((size, float(cells[2].split()[0]), float(cells[4])))
    return refs

def synthetic(folder):
    refs = {}
    for path in sorted(glob.glob(os.path.join(folder, "*.caffeine"))):
        name = re.sub(r"-\d+$", "", os.path.basename(path)[: -len(".caffeine")])
        theine = {}
        for line in open(path[: -len(".caffeine")] + ".theine"):
            cells = line.split("\t")
            if len(cells) >= 4 and cells[2] == "theine":
                theine[int(cells[1])] = float(cells[3])
        for line in open(path):
            if line.startswith("#") or not line.strip():
                continue
            cells = line.split("\t")
            size = int(cells[1])
            refs.setdefault(name, []).append((size, float(cells[3]), theine[size]))
    return {name: sorted(rows) for name, rows in refs.items()}

def table(refs):
    lines = []
    for name in sorted(refs):
        cells = ", ".join(f"({size}, {caffeine:.2f}, {theine:.2f})" for size, caffeine, theine in refs[name])
        lines.append(f'        "{name}": [{cells}],')
    return "\n".join(lines)

print(f"""// Written by scripts/peer-reference.py; do not edit.

import Foundation

/// Hit ratios (%) of Caffeine 2.6.2 and theine 2.0.0, the published W-TinyLFU designs
/// `strata-bench hitrate` compares the default policy with: entry-count caches, each request a read
/// and on a miss a write. Caffeine's are the mean of 10 runs and theine's of 3 or 5, as
/// `../shared/traces/REFERENCE.md` describes.
enum PeerReference {{
    /// One cache size's figures.
    typealias Row = (size: Int, caffeine: Double, theine: Double)

    /// The real traces of `../shared/traces`, by name (the file name before `.trace`), at the sizes
    /// REFERENCE.md measured.
    static let real: [String: [Row]] = [
{table(real(sys.argv[1]))}
    ]

    /// The synthetic traces, by name, at the sizes `strata-bench hitrate` replays them at.
    static let synthetic: [String: [Row]] = [
{table(synthetic(sys.argv[2]))}
    ]

    /// The figures of the real trace file at `path`, if it is one of them.
    static func sizes(forTraceAt path: String) -> [Row]? {{
        real[traceName(path)]
    }}

    /// `lirs-multi2` for `.../lirs-multi2.trace.gz`, and for its keys printed to `lirs-multi2.keys`.
    static func traceName(_ path: String) -> String {{
        let file = URL(fileURLWithPath: path).lastPathComponent
        return String(file.prefix {{ $0 != "." }})
    }}
}}""")
