#!/usr/bin/env python3
"""One section of docs/performance.md, written from what a GPU check left behind.

usage: scripts/perf_section.py [--title TEXT] INPUT [INPUT ...]

INPUT is any of:
  - a scripts/gpu-check.sh output directory ($OUT): its summary.txt, bench.json and the
    scenario runs under work/run-*/ (or, once the check has packed them, inside work.tgz);
  - nsa_cuda_bench's Google Benchmark JSON (a file with "benchmarks");
  - a scenario's run directory (holding results.json) or a results.json itself;
  - a gpu-check summary.txt.

Writes one markdown section to stdout: a heading with the GPU and the date(s) the inputs
record, the machine (driver, CUDA, libtorch, tree) as the inputs record it, the kernel
benchmark tables of scripts/bench_table.py followed by every row those tables do not
show, each scenario's training cells (step median +- scaled MAD, tok/s, NSA / dense)
with the command that ran it, and the check's summary as written. Every figure comes
from the inputs; what they do not record is said to be missing, never filled in.
Exit 2 on an unreadable or unrecognised input, naming it.
"""
import argparse
import glob
import json
import os
import re
import sys
import tarfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_table  # noqa: E402

# Fields of a Google Benchmark row that are not the benchmark's own counters.
BENCH_FIELDS = {"name", "run_name", "run_type", "family_index", "per_family_instance_index", "repetitions",
                "repetition_index", "threads", "iterations", "real_time", "cpu_time", "time_unit",
                "aggregate_name", "aggregate_unit", "error_occurred", "error_message", "label"}
RUN_RESULTS = re.compile(r"(?:^|/)work/run-[^/]+/results\.json$")


class BadInput(Exception):
    pass


class Inputs:
    def __init__(self):
        self.benches = []    # (label, Google Benchmark JSON)
        self.runs = []       # (label, results.json)
        self.summaries = []  # (label, [lines])


def load_json(label, text):
    try:
        return json.loads(text)
    except ValueError as e:
        raise BadInput(f"{label}: not JSON ({e})")


def add_json(inputs, label, data):
    if isinstance(data, dict) and isinstance(data.get("benchmarks"), list):
        inputs.benches.append((label, data))
    elif isinstance(data, dict) and isinstance(data.get("cells"), list):
        inputs.runs.append((label, data))
    else:
        raise BadInput(f"{label}: neither a Google Benchmark JSON (\"benchmarks\") nor a results.json (\"cells\")")


def read_text(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise BadInput(f"{path}: {e.strerror}")


def add_check_dir(inputs, path):
    """A gpu-check $OUT: labels are the names inside it."""
    found = False
    summary = os.path.join(path, "summary.txt")
    if os.path.isfile(summary):
        inputs.summaries.append(("summary.txt", read_text(summary).splitlines()))
        found = True
    bench = os.path.join(path, "bench.json")
    if os.path.isfile(bench):
        add_json(inputs, "bench.json", load_json("bench.json", read_text(bench)))
        found = True
    runs = sorted(glob.glob(os.path.join(path, "work", "run-*", "results.json")))
    for r in runs:
        label = os.path.relpath(r, path)
        add_json(inputs, label, load_json(label, read_text(r)))
    archive = os.path.join(path, "work.tgz")
    if not runs and os.path.isfile(archive):
        try:
            with tarfile.open(archive) as tar:
                for member in sorted(tar.getmembers(), key=lambda m: m.name):
                    name = member.name[2:] if member.name.startswith("./") else member.name
                    if member.isfile() and RUN_RESULTS.search(name):
                        label = f"work.tgz:{name}"
                        add_json(inputs, label, load_json(label, tar.extractfile(member).read().decode("utf-8")))
                        runs.append(label)
        except (OSError, tarfile.TarError) as e:
            raise BadInput(f"{archive}: {e}")
    if not found and not runs:
        raise BadInput(f"{path}: no summary.txt, bench.json, work/run-*/results.json or work.tgz here "
                       "(not a scripts/gpu-check.sh output directory nor a run directory)")


def gather(paths):
    inputs = Inputs()
    for path in paths:
        if os.path.isdir(path):
            if os.path.isfile(os.path.join(path, "results.json")):
                label = os.path.join(path, "results.json")
                add_json(inputs, label, load_json(label, read_text(label)))
            else:
                add_check_dir(inputs, path)
        elif os.path.basename(path).endswith(".txt"):
            inputs.summaries.append((path, read_text(path).splitlines()))
        else:
            add_json(inputs, path, load_json(path, read_text(path)))
    return inputs


# --- gpu-check's summary.txt ------------------------------------------------------------

def summary_field(lines, key):
    """The value of gpu-check's `== key: value` line (the last if repeated)."""
    value = None
    for line in lines:
        if line.startswith(f"== {key}: "):
            value = line[len(f"== {key}: "):]
    return value


def parse_machine(line):
    """gpu-check's machine line: nvidia-smi's `name, driver, compute_cap` then the UTC date."""
    if line is None:
        return None
    head, _, date = line.rpartition(" ")
    parts = [p.strip() for p in head.split(",")] if head.strip() else []
    return {"gpu": parts[0] if parts else None, "driver": parts[1] if len(parts) > 1 else None,
            "sm": parts[2] if len(parts) > 2 else None, "date": date or None}


# --- markdown helpers -------------------------------------------------------------------

def code(text):
    text = str(text)
    fence = "``" if "`" in text else "`"
    pad = " " if "`" in text else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def cell_text(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def joined(items):
    items = list(items)
    if len(items) <= 2:
        return " and ".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def date_of(stamp):
    return stamp[:10] if isinstance(stamp, str) and re.match(r"\d{4}-\d\d-\d\d", stamp) else None


def unique(values):
    out = []
    for v in values:
        if v and v not in out:
            out.append(v)
    return out


# --- kernel benchmarks -------------------------------------------------------------------

def shown_rows(data):
    """Each benchmark once, as bench_table picks it: the median aggregate where the run was
    repeated, else the row itself (the last of equal names); errors kept, other aggregates not."""
    chosen = {}
    for b in data["benchmarks"]:
        if b.get("aggregate_name", "median") != "median":
            continue
        chosen[b.get("run_name") or b["name"]] = b
    return chosen


def counters_text(b, shown=None):
    parts = []
    for key, value in b.items():
        if key in BENCH_FIELDS or key == shown or isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if key.endswith("_share"):
            parts.append(f"{key} {100 * value:.1f} %")
        else:
            parts.append(f"{key} {value:.4g}")
    return ", ".join(parts) if parts else "—"


def bench_block(label, data, summary_lines):
    out = []
    ctx = data.get("context", {})
    facts = [f"nsa_cuda_bench's JSON {code(label)}"]
    if ctx.get("date"):
        facts.append(f"run {ctx['date']}")
    if ctx.get("host_name"):
        facts.append(f"host {ctx['host_name']}")
    # The device and software nsa_cuda_bench writes into its context (older files lack them).
    for key, name in (("gpu", "GPU"), ("sm", "sm"), ("cuda_driver_api", "CUDA driver API"),
                      ("cuda_runtime", "CUDA runtime"), ("libtorch", "libtorch")):
        if ctx.get(key):
            facts.append(f"{name} {ctx[key]}")
    tree = summary_field(summary_lines, "tree") if summary_lines else None
    if tree:
        facts.append(f"tree {tree} (the check's tree line)")
    elif ctx.get("revision"):
        facts.append(f"tree {ctx['revision']} (the benchmark's context)")
    else:
        facts.append("tree not recorded with the benchmark")
    out.append(f"**Kernel benchmarks** ({', '.join(facts)}).")
    command = summary_field(summary_lines, "bench command") if summary_lines else None
    if command:
        out.append(f"Command: {code(command)}.")
    else:
        exe = ctx.get("executable")
        out.append("The command line is not recorded" + (f" (the executable: {code(exe)})." if exe else "."))
    out.append("Tables by `scripts/bench_table.py`; where the run has repetitions each figure is their median.")
    out.append("")

    # bench_table's tables; a row it cannot read (an error, a missing counter) goes to the list below.
    clean = dict(data, benchmarks=[b for b in data["benchmarks"] if not b.get("error_occurred")])
    rendered = set()
    try:
        lines = bench_table.render(clean)
        rows, decode = bench_table.collect(clean)
        rendered = {id(b) for (shape, _, _), b in rows.items() if shape in bench_table.SHAPES}
        # The decode table prints the step's row and SDPA decode's (its KV tokens are the step's counter).
        for d in decode.values():
            if "DecodeStepGraph" in d:
                rendered.update(id(d[k]) for k in ("DecodeStepGraph", "DenseSdpaDecode") if k in d)
    except (KeyError, TypeError, ValueError) as e:
        lines = [f"`scripts/bench_table.py` cannot render this file ({type(e).__name__}: {e}); every row is listed below."]
        rendered = set()
    out.extend(lines)

    rest = [(name, b) for name, b in shown_rows(data).items() if id(b) not in rendered]
    if rest:
        out.append("")
        out.append("Rows the tables above do not show (other benchmarks, a row another one replaces in its cell, "
                   "errors), with their counters:")
        out.append("")
        out.append("| benchmark | time | counters |")
        out.append("|---|---|---|")
        for name, b in rest:
            # The time as the tables read it: the benchmark's own ms (or us) counter, else Google
            # Benchmark's real time (the manual time where the benchmark times itself).
            unit = next((u for u in ("ms", "us") if isinstance(b.get(u), (int, float))), None)
            if b.get("error_occurred"):
                time = f"error: {b.get('error_message', '')}"
            elif unit:
                time = f"{b[unit]:.4g} {unit}"
            elif isinstance(b.get("real_time"), (int, float)):
                time = f"{b['real_time']:.4g} {b.get('time_unit', '')}".rstrip()
            else:
                time = "—"
            if b.get("aggregate_name") == "median" and b.get("repetitions"):
                time += f" (median of {b['repetitions']})"
            out.append(f"| {cell_text(name)} | {cell_text(time)} | {cell_text(counters_text(b, unit))} |")
    return out


# --- training cells ----------------------------------------------------------------------

STEP_TEXT = ("Step: the median of each cell's warm steps ± their scaled MAD (1.4826 · MAD), from the cell's "
             "`step_noise`; tok/s as the run recorded it. NSA ÷ dense is the pairing the run's report made "
             "(results.json's `dense_comparisons`: NSA tok/s ÷ the dense baseline's, the baseline equal on every "
             "other axis or differing only in flags the NSA layer alone reads); for a run written before that "
             "field, the dense cell whose axes equal the NSA cell's on every axis but `attention` (both passed), "
             "as dense step ÷ NSA step; — where there is none.")


def step_of(cell):
    """(median ms, scaled MAD ms or None, steps or None) of the cell's warm steps."""
    noise = cell.get("step_noise")
    if isinstance(noise, dict) and isinstance(noise.get("median_ms"), (int, float)):
        return noise["median_ms"], noise.get("mad_ms"), noise.get("steps")
    median = (cell.get("metrics") or {}).get("step_ms_median")
    if isinstance(median, (int, float)):
        return median, None, None
    return None


def dense_partner(cells, cell):
    """The dense cell with the same value on every axis but `attention`, both passed."""
    axes = cell.get("axes") or {}
    if axes.get("attention") != "nsa" or cell.get("outcome") != "pass" or step_of(cell) is None:
        return None
    rest = {k: v for k, v in axes.items() if k != "attention"}
    for other in cells:
        o = other.get("axes") or {}
        if (o.get("attention") == "dense" and other.get("outcome") == "pass" and step_of(other) is not None
                and {k: v for k, v in o.items() if k != "attention"} == rest):
            return other
    return None


def run_block(label, run, explain):
    out = []
    sc = run.get("scenario") or {}
    plat = run.get("platform") or {}
    facts = [code(sc["file"]) if sc.get("file") else None, f"results {code(label)}",
             f"tree {plat['git']}" if plat.get("git") else "tree not recorded",
             plat.get("gpu"), f"started {run['started_at']}" if run.get("started_at") else None]
    out.append(f"**Training step: scenario {code(sc.get('name', '?'))}** ({', '.join(f for f in facts if f)}).")
    if run.get("command_line"):
        out.append(f"Command: {code(run['command_line'])}.")
    else:
        out.append("The command line is not recorded.")
    status = [f"Decision **{run['decision']}**" if run.get("decision") else None,
              f"run {run['run_status']}" if run.get("run_status") else None]
    status = [s for s in status if s]
    if status:
        out.append(", ".join(status) + ".")
    out.append("")
    if explain:
        out.append(STEP_TEXT)
        out.append("")
    out.append("| cell | outcome | step ms | tok/s | NSA ÷ dense |")
    out.append("|---|---|---|---|---|")
    cells = run.get("cells") or []
    # The run's own pairing where results.json carries it (one home for the rule: the harness).
    recorded_comparisons = None
    if isinstance(run.get("dense_comparisons"), list):
        recorded_comparisons = {d.get("nsa_cell"): d for d in run["dense_comparisons"]
                                if isinstance(d, dict) and isinstance(d.get("ratio"), (int, float))}
    for cell in cells:
        outcome = str(cell.get("outcome", "?"))
        if cell.get("reason"):
            outcome += f": {str(cell['reason']).splitlines()[0]}"
        step = step_of(cell)
        if step is None:
            step_text = "—"
        else:
            median, mad, steps = step
            step_text = f"{median:.2f}"
            step_text += f" ± {mad:.2f}" if isinstance(mad, (int, float)) else " (no spread recorded)"
            if steps:
                step_text += f" ({steps} steps)"
        tok = (cell.get("metrics") or {}).get("tok_s")
        tok_text = f"{tok:,.0f}" if isinstance(tok, (int, float)) else "—"
        recorded = recorded_comparisons.get(cell.get("id")) if recorded_comparisons is not None else None
        partner = None if recorded_comparisons is not None else dense_partner(cells, cell)
        if recorded is not None:
            ratio_text = f"**{recorded['ratio']:.3f}×** (against {code(recorded.get('dense_cell', '?'))})"
        elif partner is not None:
            ratio = step_of(partner)[0] / step_of(cell)[0]
            ratio_text = f"**{ratio:.3f}×** (against {code(partner.get('id', '?'))})"
        else:
            ratio_text = "—"
        out.append(f"| {code(cell_text(cell.get('id', '?')))} | {cell_text(outcome)} | {step_text} | {tok_text} "
                   f"| {ratio_text} |")
    return out


# --- the section -------------------------------------------------------------------------

def machine_lines(inputs):
    out = []
    platforms = {}
    for label, run in inputs.runs:
        p = run.get("platform") or {}
        desc = p.get("gpu") or "GPU not recorded"
        extras = [f"sm {p['sm']}" if p.get("sm") else None, f"driver {p['driver']}" if p.get("driver") else None,
                  f"CUDA {p['cuda']}" if p.get("cuda") else None,
                  f"libtorch {p['libtorch']}" if p.get("libtorch") else None,
                  f"host {p['host']}" if p.get("host") else None, f"tree {p['git']}" if p.get("git") else None]
        extras = [e for e in extras if e]
        if extras:
            desc += f" ({', '.join(extras)})"
        platforms.setdefault(desc, []).append(code(label))
    for desc, labels in platforms.items():
        out.append(f"{desc}, as {joined(labels)} record{'s' if len(labels) == 1 else ''} it.")
    for label, lines in inputs.summaries:
        machine = summary_field(lines, "machine")
        tree = summary_field(lines, "tree")
        text = f"The check's machine line ({code(label)}): {code(machine)}" if machine is not None else \
            f"{code(label)} has no machine line"
        out.append(text + (f"; tree {tree}." if tree else "."))
    return out


def section(inputs, title):
    gpus, dates = [], []
    for _, run in inputs.runs:
        p = run.get("platform") or {}
        gpus.append(p.get("gpu"))
        dates.append(date_of(p.get("date")) or date_of(run.get("started_at")))
    for _, lines in inputs.summaries:
        m = parse_machine(summary_field(lines, "machine"))
        if m:
            gpus.append(m["gpu"])
            dates.append(date_of(m["date"]))
    for _, data in inputs.benches:
        dates.append(date_of(data.get("context", {}).get("date")))
        gpus.append(data.get("context", {}).get("gpu"))
    gpus, dates = unique(gpus), sorted(unique(dates))
    gpu_text = " / ".join(gpus) if gpus else "GPU not recorded"
    date_text = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}" if dates else "date not recorded"

    out = [f"## {title} ({gpu_text}, {date_text})", ""]
    machine = machine_lines(inputs)
    if machine:
        out.append(" ".join(machine))
        out.append("")
    summary_lines = inputs.summaries[0][1] if len(inputs.summaries) == 1 else None
    for label, data in inputs.benches:
        out.extend(bench_block(label, data, summary_lines))
        out.append("")
    for i, (label, run) in enumerate(inputs.runs):
        out.extend(run_block(label, run, explain=i == 0))
        out.append("")
    for label, lines in inputs.summaries:
        out.append(f"**The check's summary** ({code(label)}, as written):")
        out.append("")
        out.append("```text")
        out.extend(lines)
        out.append("```")
        out.append("")
    labels = [label for label, _ in inputs.benches] + [label for label, _ in inputs.runs] + \
        [label for label, _ in inputs.summaries]
    out.append(f"Written by `scripts/perf_section.py` from {joined(code(lbl) for lbl in labels)}.")
    return "\n".join(out) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs="+", metavar="INPUT",
                    help="a gpu-check output directory, a benchmark JSON, a run directory, a results.json, "
                         "a summary.txt")
    ap.add_argument("--title", default="GPU check", help="the heading's words before (GPU, date)")
    args = ap.parse_args(argv)
    try:
        inputs = gather(args.inputs)
    except BadInput as e:
        print(f"perf_section: {e}", file=sys.stderr)
        return 2
    if not (inputs.benches or inputs.runs or inputs.summaries):
        print("perf_section: nothing to write from", file=sys.stderr)
        return 2
    sys.stdout.write(section(inputs, args.title))
    return 0


if __name__ == "__main__":
    sys.exit(main())
