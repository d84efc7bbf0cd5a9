#!/usr/bin/env python3
"""Rewrites the hit-ratio tables of the eviction guide from `strata-bench hitrate --runs N` output.

    swift run -c release strata-bench hitrate --runs 10 > synthetic.txt
    swift run -c release strata-bench hitrate --runs 10 --trace ../shared/traces/lirs-gli.trace.gz ... > real.txt
    scripts/hitrate-tables.py synthetic.txt real.txt

Each table sits between `<!-- hitrate:NAME -->` and `<!-- /hitrate:NAME -->` in
Sources/Strata/Strata.docc/ChoosingAnEvictionPolicy.md (NAME: synthetic, real, summary), so the
figures there always come from one run of the command, never from hand edits.
"""
import re, sys

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

def main():
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
