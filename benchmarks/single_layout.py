"""Paired CPU time of evaluating ONE layout (a batch of one), the call `calibrate`, `compare`
and the test suite make thousands of times (issue 35). Run:

    python benchmarks/single_layout.py BASE_SRC [THIS_SRC] [ROUNDS]

The layouts are the runs of benchmarks/calibrate_speed.py ``layouts(20)`` (llama-2-7b on DGX
A100, Megatron). Each round measures both checkouts in a fresh interpreter (base first), with
PYTHONPATH set to its ``src``; a measurement is the median CPU time (time.process_time) per call
of 5 passes over the 20 layouts after one warm-up pass. Printed: the medians over the rounds and
the median of the round-by-round ratios base / this (above 1: this checkout is faster).
"""

from __future__ import annotations

import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from paired import checkouts, probe, report  # noqa: E402

PROBE = r'''
import json, statistics, sys, time
import optimus_calc.analyses.calibrate as C
from optimus_calc.analyses.calibrate_fit import predict
from optimus_calc.cli.main import main
from optimus_calc.evaluate.step import step_figure, step_of
got = []
def capture(runs, source=""):
    got.extend(runs)
    raise SystemExit(0)
C.calibrate = capture
try:
    main(["calibrate", RUNS, "-o", OUT])
except SystemExit:
    pass
runs = got
vals = {"link_efficiency": 0.71, "fixed_step_s": 0.01}
work = {
    "step_figure (calibrate's prediction)":
        lambda r: step_figure(r.inputs, r.inputs.model.name, r.figure),
    "predict with fitted values (hardware rebuilt)": lambda r: predict(r, vals),
    "step_of (compare, step: the reports)": lambda r: step_of(r.inputs, r.inputs.model.name),
}
out = {}
for name, fn in work.items():
    for r in runs:
        fn(r)
    xs = []
    for _ in range(5):
        t0 = time.process_time()
        for r in runs:
            fn(r)
        xs.append((time.process_time() - t0) / len(runs))
    out[name] = statistics.median(xs)
print(json.dumps(out))
'''


def _runs_file(d: str) -> str:
    sys.path.insert(0, HERE)
    from calibrate_speed import HEADER, layouts
    path = os.path.join(d, "runs.csv")
    with open(path, "w") as f:
        f.write(HEADER + "\n" + "\n".join(layouts(20)) + "\n")
    return path


def measure(src: str, runs: str, out: str) -> dict:
    return probe(src, PROBE.replace("RUNS", repr(runs)).replace("OUT", repr(out)))


def main() -> int:
    args = checkouts(sys.argv)
    if args is None:
        print(__doc__)
        return 2
    base, this, rounds = args
    with tempfile.TemporaryDirectory() as d:
        runs, out = _runs_file(d), os.path.join(d, "p.toml")
        pairs = [(measure(base, runs, out), measure(this, runs, out)) for _ in range(rounds)]
    report(pairs, base, lambda name, b, t, ratio: (
        f"{name}: base {b * 1e3:.3f} ms, this {t * 1e3:.3f} ms CPU per layout; "
        f"base / this {ratio:.2f}x"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
