"""Issue 35's rows 4 and 5b alone, paired, with an optional third checkout (a change's base).

benchmarks/targets.py measures every row; this measures these two. Run:

    python benchmarks/rows_4_5b.py BASE_SRC RELEASE_SRC [BEFORE_SRC] [--runs N]

BASE_SRC (e.g. a checkout of 2691995) and RELEASE_SRC (0.2.0) are ``src`` directories, run with
this interpreter and PYTHONPATH set to them (as targets.py runs its ``git archive`` copies).
Row 4: the worst unpinned plan's whole-process CPU, this / base, interleaved (this, before,
base, ...; one warm-up each), the median of the run-by-run ratios. Row 5b: the least CPU of 30
evaluations of a flat batch of 10, 36 and 72 mixed-strategy layouts (targets.MIXED), this /
release, each round this then release (then before), the median of the rounds' ratios.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import targets as T  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base")
    ap.add_argument("release")
    ap.add_argument("before", nargs="?")
    ap.add_argument("--runs", type=int, default=5)
    opt = ap.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.2f}")
    cmds = {"this": (T.cli(T.WORST), T.THIS_SRC)}
    if opt.before:
        cmds["before"] = (T.cli(T.WORST), opt.before)
    cmds["base"] = (T.cli(T.WORST), opt.base)
    t = T.interleaved(cmds, opt.runs)
    for k, xs in t.items():
        print(f"4. {k}: {' '.join(f'{x:.3f}' for x in xs)} s CPU")
    line = f"4. worst plan, this / base {T.ratio(t, 'this', 'base'):.3f}x"
    if opt.before:
        line += (f"; before / base {T.ratio(t, 'before', 'base'):.3f}x; this / before "
                 f"{T.ratio(t, 'this', 'before'):.3f}x")
    print(line)
    for n in (10, 36, 72):
        rounds = [(T.mixed_cpu(n, T.THIS_SRC), T.mixed_cpu(n, opt.release),
                   T.mixed_cpu(n, opt.before) if opt.before else None)
                  for _ in range(opt.runs)]
        line = (f"5b. {n} layouts: this / release "
                f"{statistics.median(a / b for a, b, _ in rounds):.3f}x (this "
                f"{statistics.median(a for a, _, _ in rounds) * 1e3:.2f} ms, release "
                f"{statistics.median(b for _, b, _ in rounds) * 1e3:.2f} ms")
        if opt.before:
            line += (f", before {statistics.median(c for _, _, c in rounds) * 1e3:.2f} ms; "
                     f"before / release {statistics.median(c / b for _, b, c in rounds):.3f}x")
        print(line + ")")
    return 0


if __name__ == "__main__":
    sys.exit(main())
