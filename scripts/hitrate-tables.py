#!/usr/bin/env python3
"""Rewrites the hit-ratio tables of the eviction guide from `strata-bench hitrate --runs N` output.

    swift run -c release strata-bench hitrate --runs 10 > synthetic.txt
    swift run -c release strata-bench hitrate --runs 10 --trace ../shared/traces/lirs-gli.trace.gz ... > real.txt
    scripts/hitrate-tables.py synthetic.txt real.txt

    SWIFT_DETERMINISTIC_HASHING=1 strata-bench hitrate --sized --json > sized-synthetic.jsonl
    SWIFT_DETERMINISTIC_HASHING=1 strata-bench hitrate --sized --json --trace ... > sized-real.jsonl
    scripts/hitrate-tables.py --sized sized-synthetic.jsonl sized-real.jsonl

Each table sits between `<!-- hitrate:NAME -->` and `<!-- /hitrate:NAME -->` in
Sources/Strata/Strata.docc/ChoosingAnEvictionPolicy.md (NAME: synthetic, real, summary, and with
`--sized` the cost-limited table, sized), so the figures there always come from one run of the
command, never from hand edits.
"""
import datetime, json, os, re, sys

ARTICLE = "Sources/Strata/Strata.docc/ChoosingAnEvictionPolicy.md"

def parse(path):
    rows, summary, columns = [], [], None
    text = open(path).read()
    # `--runs N` prints "mean (lowest)"; a single run prints "ratio (fraction of Belady)".
    runs = re.search(r"over (\d+) runs", text)
    for line in text.splitlines():
        if line.startswith("trace "):
            columns = line.split()
        elif line.startswith("default, "):
            summary.append(line)
        elif line.startswith("  ") and summary:
            summary.append(line.strip())
        elif columns and line and not line.startswith(("hit ratio", "-")):
            cells = re.findall(r"\S+(?: \([\d.]+\))?", line)
            if not runs:
                cells = [cell.split(" (")[0] for cell in cells]
            if len(cells) == len(columns):
                rows.append(dict(zip(columns, cells)))
    return rows, summary

def mean(cell):
    return float(cell.split()[0]) if cell not in ("-", None) else None

def table(rows, validation):
    head = "| trace | half | size | LRU | W-TinyLFU | S3-FIFO | default | Caffeine 2.6.2 | theine 2.0.0 | Belady |"
    lines = [head, "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        peers = [mean(row.get(k)) for k in ("lru", "caffeine", "theine")]
        best = max(p for p in peers if p is not None)
        strata = mean(row["default"])
        cell = row["default"].replace(" (", " (") if "(" in row["default"] else row["default"]
        bold = f"**{cell}**" if strata >= best - 0.5 else cell
        half = "validation" if row["trace"] in validation else "tuning"
        lines.append(
            f"| {row['trace']} | {half} | {row['size']} | {mean(row['lru']):.2f} | {mean(row['w-tinylfu']):.2f} | "
            f"{mean(row['s3-fifo']):.2f} | {bold} | {row.get('caffeine', '-')} | {row.get('theine', '-')} | "
            f"{mean(row['belady']):.2f} |"
        )
    return "\n".join(lines)

def replace(text, name, body):
    pattern = re.compile(rf"(<!-- hitrate:{name} -->\n)(?:.*?\n)?(<!-- /hitrate:{name} -->)", re.S)
    if not pattern.search(text):
        sys.exit(f"{ARTICLE} has no <!-- hitrate:{name} --> block")
    return pattern.sub(lambda m: m.group(1) + body + "\n" + m.group(2), text)

SIZED_POLICIES = [("lru", "LRU"), ("w-tinylfu", "W-TinyLFU"), ("s3-fifo", "S3-FIFO"), ("default", "default (adaptive)")]

def sized_results(path):
    """{trace: {policy: [(hit %, byte hit %) per size]}} from `hitrate --sized --json`, in the run's order."""
    traces = {}
    for line in open(path):
        if not line.startswith("{"):
            continue
        result = json.loads(line)
        if result.get("name") != "hitrate.sized":
            continue
        ratios = (result["hit_ratio"] * 100, result["byte_hit_ratio"] * 100)
        traces.setdefault(result["trace"], {}).setdefault(result["policy"], []).append(ratios)
    if not traces:
        sys.exit(f"{path}: no hitrate.sized line; expected the output of `strata-bench hitrate --sized --json`")
    return traces

def margins(traces):
    """The default's hit and byte hit ratio over W-TinyLFU's, per size."""
    return [
        (ours[0] - theirs[0], ours[1] - theirs[1])
        for policies in traces.values()
        for ours, theirs in zip(policies["default"], policies["w-tinylfu"])
    ]

def sized_table(synthetic, real, date):
    lines = [
        f"<!-- measured on {date} by `strata-bench hitrate --sized --json`; written by scripts/hitrate-tables.py --sized -->",
        "| trace | sizes | " + " | ".join(label for _, label in SIZED_POLICIES) + " |",
        "|---|---:|" + "---:|" * len(SIZED_POLICIES),
    ]
    for traces in (synthetic, real):
        for trace, policies in traces.items():
            means = {
                policy: tuple(sum(r[i] for r in policies[policy]) / len(policies[policy]) for i in range(2))
                for policy, _ in SIZED_POLICIES
            }
            best = max(means[policy][0] for policy, _ in SIZED_POLICIES)
            cells = [
                (f"**{hit:.2f}**" if hit == best else f"{hit:.2f}") + f" / {byte:.2f}"
                for hit, byte in (means[policy] for policy, _ in SIZED_POLICIES)
            ]
            lines.append(f"| {trace} | {len(policies['default'])} | " + " | ".join(cells) + " |")
    said = []
    for name, traces in (("real", real), ("synthetic", synthetic)):
        found = margins(traces)
        hits = sum(m[0] for m in found) / len(found)
        bytes_ = sum(m[1] for m in found) / len(found)
        below = sum(1 for m in found if m[1] < 0)
        said.append(
            f"over the {name} traces {hits:+.2f} points of hit ratio and {bytes_:+.2f} of byte hit ratio "
            f"(byte hit ratio lower at {below} of {len(found)} sizes)"
        )
    lines += ["", f"Against W-TinyLFU with admission by frequency alone, the default averages {said[0]}; {said[1]}."]
    return "\n".join(lines)

def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--sized":
        synthetic, real = sized_results(sys.argv[2]), sized_results(sys.argv[3])
        date = datetime.date.fromtimestamp(os.path.getmtime(sys.argv[3])).isoformat()
        text = open(ARTICLE).read()
        open(ARTICLE, "w").write(replace(text, "sized", sized_table(synthetic, real, date)))
        return
    source = open("Sources/strata-bench/HitRateRuns.swift").read()
    validation = set(re.findall(r'"([\w.\-+]+)"', source[source.index("validationTraces"):source.index("]", source.index("validationTraces"))]))
    synthetic, synthetic_summary = parse(sys.argv[1])
    real, real_summary = parse(sys.argv[2])
    text = open(ARTICLE).read()
    text = replace(text, "synthetic", table(synthetic, validation))
    text = replace(text, "real", table(real, validation))
    summary = ["Synthetic traces:", ""] + [f"- {l}" if l.startswith("default") else f"  - {l}" for l in synthetic_summary]
    summary += ["", "Real traces:", ""] + [f"- {l}" if l.startswith("default") else f"  - {l}" for l in real_summary]
    text = replace(text, "summary", "\n".join(summary))
    open(ARTICLE, "w").write(text)

main()
