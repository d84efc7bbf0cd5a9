#!/usr/bin/env python3
"""Rewrites the performance tables of the README and the DocC articles from `strata-bench --json`.

    scripts/figures.py --run                 # runs .build/release/strata-bench --json, then rewrites
    scripts/figures.py figures.json          # rewrites from a saved run (`strata-bench --json > figures.json`)
    scripts/figures.py --check figures.json  # rewrites nothing; fails if a table would change beyond its numbers
    scripts/figures.py postgres.json --only invalidation   # rewrites the named blocks alone

Every performance figure in README.md and in `Sources/*/*.docc/*.md` sits in a block that this
script writes, so no two places can disagree and no number is typed by hand. A block is an
opening comment that names its figures, the generated lines, and a closing comment:

    <!-- figures:NAME FIGURE FIGURE ... -->
    ... generated: a note saying where and when, then a Markdown table ...
    <!-- /figures:NAME -->

or, to say what each figure measures, one figure a line with its description after a colon, and
optionally the table's columns:

    <!-- figures:NAME
    disk.get.1k: a 1 KiB read, synchronous
    disk.get.1k.async.hop: the same read through the async API, hopping to the I/O threads
    columns: figure, measures, ns, baseline, baseline_ns, ratio
    -->
    <!-- /figures:NAME -->

NAME is unique within its file. FIGURE is a name `strata-bench --list` prints, and the table has
one row per figure, in the order given. The columns, in the order given:

    figure           the figure's name
    measures         the description given after the figure's name
    ns               the subject's nanoseconds per operation (Strata's, or NSCache's for *.nscache)
    baseline         the baseline's name
    baseline_ns      the baseline's nanoseconds per operation
    ratio            ns / baseline_ns: lower is better
    difference       ns - baseline_ns: what the subject adds per operation
    allocs           the subject's heap allocations per operation (figures that count them)
    baseline_allocs  the baseline's heap allocations per operation
    reference        the figure measured in the same rounds as a reference (such as objects(where:))
    reference_ns     the reference's nanoseconds per operation

Without a `columns:` line a table has figure, measures (when a figure has a description), ns,
baseline, baseline_ns and ratio. A block may be indented (inside a list item): its lines keep the
opening comment's indentation. The note at the top of each block says when and where the figures
were measured: with `--run`, now and on this machine; from a file, the file's modification date
and the machine this script runs on (so run it where the file was measured).

`--only NAME,NAME` rewrites the blocks of those names alone, from a run of the figures they name
(`strata-bench --json --filter postgres.`, built with the Server trait and `STRATA_POSTGRES_URL` set, for
the PostgreSQL figures, which a run without a server lacks); each block's note says when its own
figures were measured.

`--check FILE` exits 1, writing nothing, when a block is not closed, names a figure FILE lacks, or
would change in anything but its numbers and its note: a block edited by hand, or given a new
figure or column and not regenerated.
"""
import datetime, json, os, platform, re, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(".build", "release", "strata-bench")
SAVED_RUN = os.path.join(".build", "figures.json")

COLUMNS = {
    "figure": "figure",
    "measures": "what it measures",
    "ns": "ns/op",
    "baseline": "baseline",
    "baseline_ns": "baseline ns/op",
    "ratio": "ratio",
    "difference": "added ns/op",
    "allocs": "allocations/op",
    "baseline_allocs": "baseline allocations/op",
    "reference": "reference",
    "reference_ns": "reference ns/op",
}
NUMERIC = {"ns", "baseline_ns", "ratio", "difference", "allocs", "baseline_allocs", "reference_ns"}
OPENING = re.compile(r"^([ \t]*)<!-- figures:([\w.-]+)(.*?)-->[ \t]*$", re.M | re.S)


class Failure(Exception):
    pass


def documents():
    paths = ["README.md"]
    sources = os.path.join(ROOT, "Sources")
    for module in sorted(os.listdir(sources)):
        folder = os.path.join(sources, module)
        if not os.path.isdir(folder):
            continue
        for catalog in sorted(os.listdir(folder)):
            if catalog.endswith(".docc"):
                pages = sorted(os.listdir(os.path.join(folder, catalog)))
                paths += [f"Sources/{module}/{catalog}/{page}" for page in pages if page.endswith(".md")]
    return paths


def parse_spec(path, name, spec):
    """The figures a block names, with their descriptions, and its columns."""
    figures, columns = [], None
    one_line = "\n" not in spec
    for line in [spec] if one_line else spec.splitlines():
        line = line.strip()
        if not line:
            continue
        if line.startswith("columns:"):
            columns = [c.strip() for c in line[len("columns:"):].split(",") if c.strip()]
            unknown = [c for c in columns if c not in COLUMNS]
            if unknown:
                raise Failure(f"{path}: figures:{name} asks for unknown columns {unknown}; known: {list(COLUMNS)}")
        elif one_line:
            figures += [(figure, "") for figure in line.split()]
        else:
            figure, _, description = line.partition(":")
            figures.append((figure.strip(), description.strip()))
    if not figures:
        raise Failure(f"{path}: figures:{name} names no figure")
    if columns is None:
        columns = ["figure"] + (["measures"] if any(d for _, d in figures) else [])
        columns += ["ns", "baseline", "baseline_ns", "ratio"]
    return figures, columns


def blocks(path, text):
    """Every block of a document: (name, indent, figures, columns, start, end), where start..end
    is the span of the generated lines, between the opening comment's line and the closing one."""
    found, names = [], set()
    for match in OPENING.finditer(text):
        indent, name, spec = match.group(1), match.group(2), match.group(3)
        if name in names:
            raise Failure(f"{path}: two blocks are named figures:{name}")
        names.add(name)
        closing = re.compile(rf"^[ \t]*<!-- /figures:{re.escape(name)} -->[ \t]*$", re.M)
        end = closing.search(text, match.end())
        following = OPENING.search(text, match.end())
        if not end or (following and following.start() < end.start()):
            raise Failure(f"{path}: figures:{name} is not closed by <!-- /figures:{name} --> before the next block")
        figures, columns = parse_spec(path, name, spec)
        found.append((name, indent, figures, columns, match.end() + 1, end.start()))
    stray = re.findall(r"<!-- /figures:([\w.-]+) -->", text)
    if sorted(stray) != sorted(names):
        raise Failure(f"{path}: closing comments {sorted(stray)} do not match the blocks {sorted(names)}")
    return found


def number(value, places):
    if value is None:
        return "–"
    if places == "ns":
        return f"{value:,.1f}" if abs(value) < 100 else f"{round(value):,}"
    if places == "allocs":
        return f"{value:.3f}".rstrip("0").rstrip(".")
    return f"{value:.2f}"


def cell(column, figure, description, result):
    ns, baseline_ns = result.get("ns_per_op"), result.get("baseline_ns_per_op")
    if column == "figure":
        return f"`{figure}`"
    if column == "measures":
        return description
    if column == "ns":
        return number(ns, "ns")
    if column == "baseline":
        return f"`{result.get('baseline', '')}`"
    if column == "baseline_ns":
        return number(baseline_ns, "ns")
    if column == "ratio":
        return number(result.get("ratio"), "ratio")
    if column == "difference":
        return number(ns - baseline_ns if ns is not None and baseline_ns is not None else None, "ns")
    if column == "allocs":
        return number(result.get("allocs_per_op"), "allocs")
    if column == "baseline_allocs":
        return number(result.get("baseline_allocs_per_op"), "allocs")
    if column == "reference":
        return f"`{result['reference']}`" if "reference" in result else "–"
    if column == "reference_ns":
        return number(result.get("reference_ns_per_op"), "ns")
    raise AssertionError(column)


def table(path, name, indent, figures, columns, results, note):
    missing = [figure for figure, _ in figures if figure not in results]
    if missing:
        raise Failure(f"{path}: figures:{name} names figures the run does not have: {', '.join(missing)}")
    lines = [f"<!-- {note} -->"]
    lines.append("| " + " | ".join(COLUMNS[c] for c in columns) + " |")
    lines.append("|" + "|".join("---:" if c in NUMERIC else "---" for c in columns) + "|")
    for figure, description in figures:
        lines.append("| " + " | ".join(cell(c, figure, description, results[figure]) for c in columns) + " |")
    return "".join(indent + line + "\n" for line in lines)


def rewrite(path, text, results, note, only=None):
    pieces, position = [], 0
    for name, indent, figures, columns, start, end in blocks(path, text):
        kept = only is not None and name not in only
        generated = text[start:end] if kept else table(path, name, indent, figures, columns, results, note)
        pieces += [text[position:start], generated]
        position = end
    return "".join(pieces) + text[position:]


def machine():
    cpu = ""
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), "")
    except OSError:
        pass
    cores = os.cpu_count() or 0
    return f"{platform.system()} {platform.machine()}, {cores} cores" + (f" ({cpu})" if cpu else "")


def load(lines):
    results = {}
    for line in lines:
        line = line.strip()
        if line.startswith("{"):
            result = json.loads(line)
            results[result["name"]] = result
    if not results:
        raise Failure("no figure in the input: expected the JSON lines of `strata-bench --json`")
    return results


def masked(block):
    """A block's generated lines without its note and with every number replaced, for --check."""
    lines = [line for line in block.splitlines() if not line.strip().startswith("<!--")]
    return "\n".join(re.sub(r"-?[\d,]+(\.\d+)?|–", "N", line) for line in lines)


def check(paths, results):
    problems = []
    for path in paths:
        text = open(os.path.join(ROOT, path), encoding="utf-8").read()
        try:
            for name, indent, figures, columns, start, end in blocks(path, text):
                expected = table(path, name, indent, figures, columns, results, "note")
                if masked(text[start:end]) != masked(expected):
                    problems.append(f"{path}: figures:{name} differs from what scripts/figures.py writes")
        except Failure as failure:
            problems.append(str(failure))
    return problems


def main(arguments):
    os.chdir(ROOT)
    usage = "usage: scripts/figures.py (--run | FILE [--only NAME,NAME...] | --check FILE)"
    only = None
    if len(arguments) == 3 and arguments[1] == "--only":
        only = set(arguments[2].split(","))
        arguments = arguments[:1]
    if arguments == ["--run"]:
        if not os.access(BENCH, os.X_OK):
            raise Failure(f"{BENCH} is missing: swift build -c release --product strata-bench")
        output = subprocess.run([BENCH, "--json"], stdout=subprocess.PIPE, text=True, check=True).stdout
        with open(SAVED_RUN, "w") as saved:  # kept, so that a failed rewrite need not run it again
            saved.write(output)
        results, date = load(output.splitlines()), datetime.date.today()
    elif len(arguments) == 2 and arguments[0] == "--check":
        problems = check(documents(), load(open(arguments[1]).read().splitlines()))
        for problem in problems:
            print(problem, file=sys.stderr)
        return 1 if problems else 0
    elif len(arguments) == 1 and not arguments[0].startswith("-"):
        results = load(open(arguments[0]).read().splitlines())
        date = datetime.date.fromtimestamp(os.path.getmtime(arguments[0]))
    else:
        print(usage, file=sys.stderr)
        return 2
    note = (
        f"measured on {date.isoformat()}, {machine()}, by `strata-bench --json`; "
        "generated by `scripts/figures.py --run`, never edited by hand"
    )
    # Every document is rewritten in memory first, so a block that fails leaves every file as it was.
    changed = {}
    for path in documents():
        text = open(path, encoding="utf-8").read()
        new = rewrite(path, text, results, note, only)
        if new != text:
            changed[path] = new
    for path, text in changed.items():
        with open(path, "w", encoding="utf-8") as file:
            file.write(text)
        print(f"rewrote {path}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Failure as failure:
        sys.exit(f"scripts/figures.py: {failure}")
