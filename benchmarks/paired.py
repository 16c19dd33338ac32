"""Paired in-process CPU times of two checkouts (this one and a previous one), so a change is
judged against its base on the same machine in the same minutes. Run:

    python benchmarks/paired.py BASE_SRC [THIS_SRC] [ROUNDS]

BASE_SRC / THIS_SRC are the ``src`` directories of the two checkouts (THIS_SRC defaults to this
one's). Each round runs every measurement in a fresh interpreter per checkout, base first then
this, with PYTHONPATH set to its ``src``; a measurement is the median CPU time
(time.process_time) of 9 calls after one warm-up. Printed: the medians over the rounds and the
median of the round-by-round ratios base / this (above 1: this checkout is faster).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

PROBE = r'''
import json, statistics, sys, time
sys.path.insert(0, BENCH_DIR)
import run
from optimus_calc.analyses.nics import size_nics
from optimus_calc.search import plan as P
cat, si = run.default_plan_inputs()
space = run._space(si.model, si.hw, si.training.global_batch, si.training.seq_len, si)
args = (si.model, si.hw, si.training, si.assumptions)
rec = P.plan_search(cat, si).recommended
work = {
    "evaluator, memory only (pass 1)": lambda: run.evaluate_space(space, *args, with_step=False),
    "evaluator, memory + step time": lambda: run.evaluate_space(space, *args),
    "planner's whole search (plan_search)": lambda: P.plan_search(cat, si),
    "size_nics, the recommendation": lambda: size_nics(cat, si.model, si.hw, rec.layout,
                                                       rec.training, si.assumptions),
}
out = {}
for name, fn in work.items():
    fn()
    xs = []
    for _ in range(9):
        t0 = time.process_time()
        fn()
        xs.append(time.process_time() - t0)
    out[name] = statistics.median(xs)
out["layouts"] = len(space)
print(json.dumps(out))
'''


def probe(src: str, code: str) -> dict:
    """The JSON the last line of ``code`` prints, run in a fresh interpreter on checkout ``src``
    (also benchmarks/single_layout.py's)."""
    env = dict(os.environ, PYTHONPATH=src, OPENBLAS_NUM_THREADS="1")
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if p.returncode:
        raise SystemExit(f"{src}: {p.stderr.strip()[-400:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def checkouts(argv: list[str]) -> tuple[str, str, int] | None:
    """(BASE_SRC, THIS_SRC, ROUNDS) of the command line; None without BASE_SRC."""
    if len(argv) < 2:
        return None
    this = os.path.abspath(argv[2]) if len(argv) > 2 else os.path.join(HERE, "..", "src")
    return os.path.abspath(argv[1]), this, int(argv[3]) if len(argv) > 3 else 5


def measure(src: str) -> dict:
    return probe(src, PROBE.replace("BENCH_DIR", repr(HERE)))


def report(pairs: list[tuple[dict, dict]], base: str, line) -> None:
    """Print each probe figure's medians over the rounds and the median round-by-round ratio
    base / this; ``line(name, base_s, this_s, ratio)`` formats one figure (None: skip it)."""
    print(f"paired, {len(pairs)} rounds, load average {os.getloadavg()[0]:.2f}; base {base}")
    for name in pairs[0][0]:
        b = statistics.median(r[0][name] for r in pairs)
        t = statistics.median(r[1][name] for r in pairs)
        text = line(name, b, t, statistics.median(r[0][name] / r[1][name] for r in pairs))
        if text is not None:
            print(text)


def main() -> int:
    args = checkouts(sys.argv)
    if args is None:
        print(__doc__)
        return 2
    base, this, rounds = args
    runs = [(measure(base), measure(this)) for _ in range(rounds)]
    n = runs[0][1]["layouts"]

    def line(name, b, t, ratio):
        if name == "layouts":
            return None
        rate = "" if name.startswith("size_nics") else f", {n / t:,.0f} layouts/s CPU"
        return (f"{name}: base {b * 1e3:.2f} ms, this {t * 1e3:.2f} ms CPU{rate}; "
                f"ratio base/this {ratio:.2f}")
    report(runs, base, line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
