"""Issue 35's targets, each printed as a ratio measured in one run, never asserted. Run:

    python benchmarks/targets.py [--base COMMIT] [--release COMMIT] [--runs N] [--tests]
                                 [--rows 1,2,3,4,5]

(``make bench`` runs it with ``--tests``, and BASE= and RELEASE= when given). Whole-process figures are CPU
seconds (user + sys of the child, os.wait4) of interleaved runs (A B A B ..., one warm-up each),
so a machine whose speed drifts slows both alike; a ratio is the median of the run-by-run
ratios. ``--base`` (default 2691995, the commit issue 35 measured) and ``--release`` (default
a7cc365, version 0.2.0) are checked out with ``git archive`` into a temporary directory and run
with ``PYTHONPATH`` set to their ``src``, by the same interpreter as this checkout (which runs
the same way), so both import their own code and the same libraries. ``--rows 1`` measures
row 1 only (default rows 1-5).

Rows (issue 35's table):
1. cold `plan llama70b --nodes 2` / `python -c "import numpy, pydantic, click, rich"`
2. cold README break-even example / cold `plan`
3. `breakeven llama70b --nodes 2` (planner + every card) / cold `plan`
4. worst unpinned plan found (`plan qwen3-30b-a3b --nodes 720 --seq-len 32768
   --global-batch 99792000`), this / base
5. mixed offload strategies in one small evaluation: `compare llama70b --nodes 2 --format json`
   run in-process after a warm-up (its ~10 layouts, one per strategy and card), this / release;
   5b. one evaluation of a flat batch of 10, 36 and 72 layouts mixing the strategies (as the
   planner's top-K report evaluates them), this / release
6. (``--tests``, as ``make bench`` runs it: several minutes) the test suite's CPU, this / base
"""

from __future__ import annotations

import argparse
import contextlib
import io
import atexit
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
THIS_SRC = os.path.join(ROOT, "src")
PY = sys.executable
PLAN = ["plan", "llama70b", "--nodes", "2"]
README_BREAKEVEN = ["breakeven", "llama70b", "--nodes", "2", "--tp", "2", "--pp", "4", "--zero",
                    "3", "--recompute", "full", "--seq-len", "2048", "--global-batch", "16"]
CATALOG_BREAKEVEN = ["breakeven", "llama70b", "--nodes", "2"]
WORST = ["plan", "qwen3-30b-a3b", "--nodes", "720", "--seq-len", "32768", "--global-batch",
         "99792000"]
COMPARE = ["compare", "llama70b", "--nodes", "2", "--format", "json"]


def checkout(commit: str) -> str:
    """``commit``'s tree in a temporary directory (removed at exit); its ``src``."""
    where = tempfile.mkdtemp(prefix="optimus-calc-bench-")
    atexit.register(shutil.rmtree, where, True)
    archive = subprocess.run(["git", "-C", ROOT, "archive", commit], capture_output=True,
                             check=True).stdout
    subprocess.run(["tar", "-x", "-C", where], input=archive, check=True)
    return os.path.join(where, "src")


def _env(src: str | None) -> dict[str, str]:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # with the bytecode cache, as installed
    if src is not None:
        env["PYTHONPATH"] = src
    return env


def cpu_of(argv: list[str], src: str | None, check: bool = True, cwd: str | None = None
           ) -> float:
    """One whole-process run's CPU seconds (user + sys, its children's included); ``check``:
    a non-zero exit stops the benchmark (else it is reported on stderr)."""
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, env=_env(src), cwd=cwd)
    _, status, usage = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        if check:
            raise SystemExit(f"{' '.join(argv)} (PYTHONPATH={src}) failed")
        print(f"(exit {os.waitstatus_to_exitcode(status)}: {' '.join(argv[-1:])} in "
              f"{cwd or '.'}, PYTHONPATH={src})", file=sys.stderr)
    return usage.ru_utime + usage.ru_stime


def cli(args: list[str]) -> list[str]:
    return [PY, "-m", "optimus_calc", *args]


def interleaved(commands: dict[str, tuple[list[str], str | None]], runs: int) -> dict:
    """CPU seconds of each command, A B C A B C ..., after one warm-up each."""
    for argv, src in commands.values():
        cpu_of(argv, src)
    out: dict[str, list[float]] = {k: [] for k in commands}
    for _ in range(runs):
        for k, (argv, src) in commands.items():
            out[k].append(cpu_of(argv, src))
    return out


def ratio(t: dict, a: str, b: str) -> float:
    return statistics.median(x / y for x, y in zip(t[a], t[b]))


def med(xs) -> float:
    return statistics.median(xs)


def row(what: str, value: float, target: str, met: bool, detail: str) -> None:
    print(f"{what}: {value:.2f}x  [target {target}: {'met' if met else 'NOT met'}]  ({detail})")


IN_PROCESS = r"""
import io, json, sys, time
from optimus_calc.cli.main import main
args = json.loads(sys.argv[1])
def once():
    out, sys.stdout = sys.stdout, io.StringIO()
    try:
        main(args)
    except SystemExit:
        pass
    finally:
        sys.stdout = out
once()
xs = []
for _ in range(int(sys.argv[2])):
    t0 = time.process_time()
    once()
    xs.append(time.process_time() - t0)
xs.sort()
print(xs[len(xs) // 2])
"""


def warm_cpu(args: list[str], src: str, calls: int = 15) -> float:
    """Median CPU seconds of a command run in-process after one warm-up call."""
    p = subprocess.run([PY, "-c", IN_PROCESS, json.dumps(args), str(calls)],
                       capture_output=True, text=True, env=_env(src))
    if p.returncode:
        raise SystemExit(f"{args} (PYTHONPATH={src}): {p.stderr.strip()[-300:]}")
    return float(p.stdout.strip().splitlines()[-1])


# 5b: one evaluation of a flat batch of mixed offload strategies (what the planner's top-K
# report and `compare`-like callers evaluate), every stage, in-process; the API both this
# checkout and 0.2.0 have (Batch.of rows concatenated)
MIXED = r"""
import sys, time
from dataclasses import fields
import numpy as np
from optimus_calc import catalog
from optimus_calc.evaluate.batch import Batch
from optimus_calc.evaluate.context import resolve_hardware
from optimus_calc.evaluate.engine import evaluate
try:
    from optimus_calc.specs.assumptions import Assumptions
except ImportError:  # 0.2.0
    from optimus_calc.specs.training import Assumptions
from optimus_calc.specs.training import Layout, Offload, Training
cat = catalog.load(())
model, hw = cat.get("llama70b", "model"), resolve_hardware(cat, "dgx-a100", 2,
                                                            smartnic="bluefield-3")
tr = Training(seq_len=4096, global_batch=64, micro_batch=1)
lays = [Layout(tp=t, pp=p, dp=16 // (t * p), zero=z, offload=Offload(o))
        for o in ("none", "cpu", "nvme", "smartnic") for z in (1, 2, 3) for t in (8, 4, 2, 1)
        for p in (1, 2)]
rows = [Batch.of(lays[i], tr) for i in np.random.default_rng(0).permutation(len(lays))[:N]]
batch = Batch(**{f.name: np.concatenate([np.atleast_1d(getattr(r, f.name)) for r in rows])
                 for f in fields(Batch)})
evaluate(batch, model, hw, tr, Assumptions(), all_stages=True)
xs = []
for _ in range(30):
    t0 = time.process_time()
    evaluate(batch, model, hw, tr, Assumptions(), all_stages=True)
    xs.append(time.process_time() - t0)
print(min(xs))
"""


def mixed_cpu(n: int, src: str) -> float:
    """The least CPU seconds of 30 evaluations of a mixed flat batch of ``n`` layouts."""
    p = subprocess.run([PY, "-c", MIXED.replace("[:N]", f"[:{n}]")], capture_output=True,
                       text=True, env=_env(src))
    if p.returncode:
        raise SystemExit(f"mixed batch (PYTHONPATH={src}): {p.stderr.strip()[-300:]}")
    return float(p.stdout.strip().splitlines()[-1])


def row1(opt, base, release) -> None:
    libs = [PY, "-c", "import numpy, pydantic, click, rich"]
    t = interleaved({"plan": (cli(PLAN), THIS_SRC), "libs": (libs, THIS_SRC),
                     "base plan": (cli(PLAN), base)}, opt.runs)
    r = ratio(t, "plan", "libs")
    row("1. cold plan / libraries", r, "<= 1.8x", r <= 1.8,
        f"plan {med(t['plan']):.3f} s, libraries {med(t['libs']):.3f} s; base "
        f"{ratio(t, 'base plan', 'libs'):.2f}x; plan this / base "
        f"{ratio(t, 'plan', 'base plan'):.2f}x; {opt.runs} runs; run by run "
        + ", ".join(f"{a / b:.2f}" for a, b in zip(t["plan"], t["libs"])))


def row2(opt, base, release) -> None:
    t = interleaved({"breakeven": (cli(README_BREAKEVEN), THIS_SRC),
                     "plan": (cli(PLAN), THIS_SRC),
                     "base breakeven": (cli(README_BREAKEVEN), base)}, opt.runs)
    r = ratio(t, "breakeven", "plan")
    row("2. README break-even / cold plan", r, "<= 1.5x", r <= 1.5,
        f"breakeven {med(t['breakeven']):.3f} s, plan {med(t['plan']):.3f} s; breakeven this / "
        f"base {ratio(t, 'breakeven', 'base breakeven'):.2f}x; {opt.runs} runs")


def row3(opt, base, release) -> None:
    runs = max(3, opt.runs // 2)
    t = interleaved({"breakeven": (cli(CATALOG_BREAKEVEN), THIS_SRC),
                     "plan": (cli(PLAN), THIS_SRC),
                     "base breakeven": (cli(CATALOG_BREAKEVEN), base)}, runs)
    r = ratio(t, "breakeven", "plan")
    row("3. breakeven llama70b --nodes 2 / cold plan", r, "<= 2x", r <= 2.0,
        f"breakeven {med(t['breakeven']):.3f} s, plan {med(t['plan']):.3f} s; this / base "
        f"{ratio(t, 'breakeven', 'base breakeven'):.2f}x; {runs} runs")


def row4(opt, base, release) -> None:
    t = interleaved({"this": (cli(WORST), THIS_SRC), "base": (cli(WORST), base)}, 3)
    r = ratio(t, "this", "base")
    row("4. worst unpinned plan, this / base", r, "<= 0.5x", r <= 0.5,
        f"{' '.join(WORST)}: this {med(t['this']):.2f} s, base {med(t['base']):.2f} s; 3 runs")


def row5(opt, base, release) -> None:
    pairs = [(warm_cpu(COMPARE, THIS_SRC), warm_cpu(COMPARE, release)) for _ in range(3)]
    r = med(a / b for a, b in pairs)
    row("5. compare (mixed strategies, ~10 layouts) in-process, this / release", r, "<= 1.0x",
        r <= 1.0, f"this {med(a for a, _ in pairs) * 1e3:.1f} ms, release "
        f"{med(b for _, b in pairs) * 1e3:.1f} ms CPU; 3 rounds of 15 calls")
    for n in (10, 36, 72):
        pairs = [(mixed_cpu(n, THIS_SRC), mixed_cpu(n, release)) for _ in range(3)]
        r = med(a / b for a, b in pairs)
        row(f"5b. one evaluation of {n} layouts of mixed offload strategies, this / release", r,
            "<= 1.0x", r <= 1.0, f"this {med(a for a, _ in pairs) * 1e3:.2f} ms, release "
            f"{med(b for _, b in pairs) * 1e3:.2f} ms CPU (least of 30); 3 rounds")


def row6(opt, base, release) -> None:
    # each checkout's own suite from its own root (its conftest, pyproject and docs), one
    # process (no xdist), its subprocesses' CPU included; a failing test is reported, not fatal
    suite = [PY, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:cacheprovider", "tests"]
    this_cpu = cpu_of(suite, THIS_SRC, check=False, cwd=ROOT)
    base_cpu = cpu_of(suite, base, check=False, cwd=os.path.dirname(base))
    row("6. test suite CPU, this / base", this_cpu / base_cpu, "<= 0.5x",
        this_cpu / base_cpu <= 0.5, f"this {this_cpu:.0f} s, base {base_cpu:.0f} s; one run")


ROWS = {"1": row1, "2": row2, "3": row3, "4": row4, "5": row5, "6": row6}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="2691995")
    ap.add_argument("--release", default="a7cc365")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--tests", action="store_true")
    ap.add_argument("--rows", default="1,2,3,4,5",
                    help="the rows to measure, comma-separated (6 only with --tests)")
    ap.add_argument("--write", metavar="PAGE", help="also write the report, with the date and "
                    "the machine, between PAGE's <!-- targets --> and <!-- /targets --> lines")
    opt = ap.parse_args(argv)
    if opt.write:
        with open(opt.write, encoding="utf-8") as f:
            if MARK[0] not in f.read():
                ap.error(f"--write {opt.write}: no '{MARK[0]}' line to write after")
        out = io.StringIO()
        with contextlib.redirect_stdout(Tee(sys.stdout, out)):
            code = _measure(opt, ap)
        write_block(opt.write, out.getvalue())
        return code
    return _measure(opt, ap)


MARK = ("<!-- targets -->", "<!-- /targets -->")


class Tee(io.TextIOBase):
    def __init__(self, *streams):
        self.streams = streams

    def write(self, text):
        for s in self.streams:
            s.write(text)
        return len(text)


def machine() -> str:
    """The date, commit and machine the figures come from."""
    import datetime
    import platform
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")),
                       cpu)
    except OSError:
        pass
    head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip() or "?"
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (f"Measured {when} at commit {head} on {cpu}, {os.cpu_count()} CPUs, Python "
            f"{platform.python_version()}:")


def write_block(page: str, report: str) -> None:
    """Replace the lines between MARK in ``page`` with ``report`` (atomically)."""
    with open(page, encoding="utf-8") as f:
        text = f.read()
    start = text.index(MARK[0]) + len(MARK[0])
    end = text.index(MARK[1], start) if MARK[1] in text[start:] else start
    block = f"\n{machine()}\n\n```\n{report.rstrip()}\n```\n"
    tmp = page + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text[:start] + block + (text[end:] if end > start else MARK[1] + "\n"
                                        + text[start:]))
    os.replace(tmp, page)


def _measure(opt, ap) -> int:
    rows = [r.strip() for r in opt.rows.split(",")] + (["6"] if opt.tests else [])
    if unknown := [r for r in rows if r not in ROWS]:
        ap.error(f"--rows: no row {', '.join(unknown)} (rows are 1-6)")
    base, release = checkout(opt.base), checkout(opt.release)
    print(f"issue 35 targets, paired CPU; base {opt.base}, release {opt.release}, "
          f"load average {os.getloadavg()[0]:.2f}")
    for r in sorted(set(rows)):
        ROWS[r](opt, base, release)
    if "6" not in rows:
        print("6. test suite CPU, this / base: not run (--tests; several minutes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
