#!/usr/bin/env python3
"""Rewrites the load-test tables of "Getting started on a server" from the runs `scripts/load.sh` kept.

    scripts/load.sh                          # one run; keeps what it measured in .build/load/DATE-TIME
    scripts/load-tables.py .build/load/*     # rewrites the tables from every run given
    scripts/load-tables.py --check           # rewrites nothing; fails if a block is not closed

Each table sits between `<!-- load:NAME -->` and `<!-- /load:NAME -->` in
Sources/Strata/Strata.docc/GettingStartedOnAServer.md (NAME: throughput, staleness, fault), so every
figure there comes from wrk's reports, the servers' /stats and the writer's reports of the runs
given, never from hand edits. Where the runs differ, a cell gives the lowest and the highest
("1.30–1.43 ms"); a p99 that moves a lot from run to run is still one range.
"""
import json, os, re, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARTICLE = os.path.join(ROOT, "Sources", "Strata", "Strata.docc", "GettingStartedOnAServer.md")
SERVERS = ["8081", "8082", "8083", "8084"]
FROZEN = "8084"  # the server behind the relay that load.sh freezes


class Failure(Exception):
    pass


def read(run, name):
    path = os.path.join(run, name)
    if not os.path.exists(path):
        raise Failure(f"{run}: {name} is missing (a run of an older load.sh, or one that did not finish)")
    with open(path) as file:
        return file.read()


def milliseconds(text):
    """wrk's "850.00us", "1.30ms", "1.02s" in milliseconds."""
    match = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text)
    if not match:
        raise Failure(f"not a wrk duration: {text!r}")
    value, unit = float(match.group(1)), match.group(2)
    return value * {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 6e4}[unit]


def wrk(run, name):
    """Requests per second, p50 and p99 (ms) of one wrk report."""
    text = read(run, name)
    rps = re.search(r"Requests/sec:\s+([\d.]+)", text)
    p50 = re.search(r"^\s+50%\s+(\S+)", text, re.M)
    p99 = re.search(r"^\s+99%\s+(\S+)", text, re.M)
    if not (rps and p50 and p99):
        raise Failure(f"{run}/{name}: not a wrk report with --latency")
    return float(rps.group(1)), milliseconds(p50.group(1)), milliseconds(p99.group(1))


def percentiles(text, where):
    """The "p50 X ms, p99 Y ms, max Z ms" of the writer, in ms (None for "-")."""
    match = re.search(r"p50 (\S+)(?: ms)?, p99 (\S+)(?: ms)?, max (\S+)(?: ms)?", text)
    if not match:
        raise Failure(f"no percentiles in {where}: {text!r}")
    return [None if value == "-" else float(value) for value in match.groups()]


def measure(run):
    """What one kept run measured."""
    figures = json.loads(read(run, "run.json"))
    figures["uncached"] = wrk(run, "uncached.txt")
    figures["cached"] = wrk(run, "cached.txt")
    figures["uncachedCalls"] = json.loads(read(run, "uncached-stats.json"))["upstreamCalls"]
    cached = json.loads(read(run, "cached-stats.json"))
    figures["cachedCalls"], figures["cachedIDs"] = cached["upstreamCalls"], cached["distinctIDs"]
    four = [wrk(run, f"four-{port}.txt") for port in SERVERS]
    figures["fourRPS"] = sum(rps for rps, _, _ in four)
    figures["fourP99"] = [p99 for _, _, p99 in four]
    stats = [json.loads(line) for line in read(run, "four-stats.jsonl").splitlines() if line.strip()]
    figures["fourCalls"] = sum(entry["upstreamCalls"] for entry in stats)

    writer = read(run, "writer.txt")
    old, new = writer.split("first new answer received:", 1)
    figures["changes"] = int(re.search(r"(\d+) changes × servers", old).group(1))
    figures["lastOld"] = percentiles(old, f"{run}/writer.txt")
    figures["firstNew"] = percentiles(new, f"{run}/writer.txt")
    figures["missed"] = int(re.search(r"not seen within [^:]+: (\d+)", new).group(1))

    fault = read(run, "fault-writer.txt")
    stopped = re.search(r"the relay stopped for ([\d.]+) ms", fault)
    if not stopped:
        raise Failure(f"{run}/fault-writer.txt: no fault reported")
    figures["stopped"] = float(stopped.group(1))
    figures["fault"] = {}
    for line in fault.splitlines():
        match = re.match(r"\s+port (\d+), (before|during|after) the fault: (\d+) changes, (.*); not seen within [^:]+: (\d+)", line)
        if match:
            port, phase, changes, rest, missed = match.groups()
            figures["fault"][(port, phase)] = (int(changes), percentiles(rest, line), int(missed))
    if len(figures["fault"]) != 3 * len(SERVERS):
        raise Failure(f"{run}/fault-writer.txt: expected every server before, during and after the fault")
    return figures


def number(value, digits):
    return f"{value:,.{digits}f}"


def span(values, digits=1, unit=" ms"):
    """The lowest and highest of `values`, or the one value when they agree."""
    values = [value for value in values if value is not None]
    if not values:
        return "-"
    low, high = number(min(values), digits), number(max(values), digits)
    return (low if low == high else f"{low}–{high}") + unit


def runs_note(runs):
    dates = sorted({run["date"] for run in runs})
    first = runs[0]
    count = len(runs)
    said = {1: "one run", 2: "two runs", 3: "three runs"}.get(count, f"{count} runs")
    return (
        f"{said} ({', '.join(dates)}; {first['cores']} cores, {first['connections']} connections, "
        f"{first['duration']} a run, {first['ids']:,} products)"
    )


def throughput(runs):
    ratios = [run["cached"][0] / run["uncached"][0] for run in runs]
    return [
        f"| run: {runs_note(runs)} | requests/s | p50 | p99 | upstream calls |",
        "| --- | --- | --- | --- | --- |",
        "| one server, no cache | {} | {} | {} | {} (one per request) |".format(
            span([run["uncached"][0] for run in runs], 0, ""),
            span([run["uncached"][1] for run in runs]),
            span([run["uncached"][2] for run in runs]),
            span([run["uncachedCalls"] for run in runs], 0, ""),
        ),
        "| one server, cache, warm | {} ({} times no cache) | {} | {} | {} for {} distinct products |".format(
            span([run["cached"][0] for run in runs], 0, ""),
            span(ratios, 0, ""),
            span([run["cached"][1] for run in runs], 2),
            span([run["cached"][2] for run in runs], 2),
            span([run["cachedCalls"] for run in runs], 0, ""),
            span([run["cachedIDs"] for run in runs], 0, ""),
        ),
        "| four servers, cache, writer | {} (all four) | | {} (the four servers' p99s) | {} |".format(
            span([run["fourRPS"] for run in runs], 0, ""),
            span([p99 for run in runs for p99 in run["fourP99"]]),
            span([run["fourCalls"] for run in runs], 0, ""),
        ),
    ]


def staleness(runs):
    changes = span([run["changes"] for run in runs], 0, "")
    rows = [
        f"| staleness after a change ({changes} changes × servers a run) | p50 | p99 | max | not seen within 2 s |",
        "| --- | --- | --- | --- | --- |",
    ]
    for label, key in [
        ("the last answer with the old version, after the commit", "lastOld"),
        ("the first answer with the new version received", "firstNew"),
    ]:
        rows.append(
            "| {} | {} | {} | {} | {} |".format(
                label, *(span([run[key][i] for run in runs]) for i in range(3)),
                span([run["missed"] for run in runs], 0, ""),
            )
        )
    return rows


def fault(runs):
    stopped = span([run["stopped"] for run in runs], 0)
    rows = [
        f"| staleness, relay stopped for {stopped} | changes | p50 | max | not served within 12 s |",
        "| --- | --- | --- | --- | --- |",
    ]
    others = [port for port in SERVERS if port != FROZEN]
    for label, ports, phase in [
        ("the frozen server, changes committed before the fault", [FROZEN], "before"),
        ("the frozen server, committed during the fault", [FROZEN], "during"),
        ("the frozen server, committed after the fault", [FROZEN], "after"),
        ("the other three servers, committed during the fault", others, "during"),
    ]:
        seen = [run["fault"][(port, phase)] for run in runs for port in ports]
        rows.append(
            "| {} | {} | {} | {} | {} |".format(
                label,
                span([changes for changes, _, _ in seen], 0, ""),
                span([figures[0] for _, figures, _ in seen]),
                span([figures[2] for _, figures, _ in seen]),
                span([missed for _, _, missed in seen], 0, ""),
            )
        )
    return rows


TABLES = {"throughput": throughput, "staleness": staleness, "fault": fault}


def rewrite(text, runs):
    for name, build in TABLES.items():
        pattern = re.compile(rf"(<!-- load:{name} -->\n)(.*?)(<!-- /load:{name} -->)", re.S)
        if not pattern.search(text):
            raise Failure(f"{ARTICLE}: no closed <!-- load:{name} --> block")
        if runs is not None:
            lines = build(runs)
            text = pattern.sub(lambda match: match.group(1) + "\n".join(lines) + "\n" + match.group(3), text)
    return text


def main(arguments):
    with open(ARTICLE) as file:
        text = file.read()
    if arguments == ["--check"]:
        rewrite(text, None)
        return 0
    if not arguments:
        print(__doc__, file=sys.stderr)
        return 2
    runs = [measure(run) for run in sorted(arguments)]
    updated = rewrite(text, runs)
    if updated != text:
        with open(ARTICLE, "w") as file:
            file.write(updated)
    print(f"load tables: {len(runs)} runs, {'rewritten' if updated != text else 'unchanged'}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Failure as failure:
        print(f"load-tables: {failure}", file=sys.stderr)
        sys.exit(1)
