"""A seeded, stratified sample of `make mutate`'s mutants, run and scored (docs/hardening.md).

Every mutant of the scope takes hours (23,014 mutants on 2026-11-26), so this script generates
them all, draws PER_DIR of them at random from each directory (frameworks/, search/, analyses/,
evaluate/ and equations/compiled/, the strata), runs only those with mutmut, and prints per
directory the mutants in scope, the sample, killed, survived, timeout and the score with its 95%
Wilson interval, then the overall score weighted by each directory's share of the scope. Run from
the repository root (mutmut reads pyproject's [tool.mutmut]):

    python tools/mutate_sample.py --per-dir 100 --seed 20261126 [--max-children 1]
    python tools/mutate_sample.py --per-dir 100 --seed 20261126 --report  # score mutants/, no run

`make mutate-sample` runs the first under `nice -n 19`. Sampled mutants that already have a
result in mutants/ are not run again (--rerun runs them), so an interrupted run resumes and a
larger --per-dir extends a smaller one (the larger sample contains the smaller);
--rerun-undetected runs the survivors again. The score counts a timeout as detected (the mutant
hung a test) and a mutant no selected test reaches ("no tests") as undetected; mutants not yet
run (an interrupted run) are left out of the score and counted as not checked.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import subprocess
import sys
from pathlib import Path

STRATA = ("frameworks", "search", "analyses", "evaluate", "compiled")
PACKAGE = "optimus_calc"
Z_95 = 1.959963984540054  # two-sided 95% normal quantile
DETECTED = {"killed", "timeout", "segfault", "caught by type check"}
UNDETECTED = {"survived", "no tests"}


def stratum_of(mutant_name: str) -> str | None:
    """The directory a mutant belongs to: `optimus_calc.equations.compiled.step.x_f__mutmut_1`
    -> "compiled", `optimus_calc.analyses.breakeven.solve.x_f__mutmut_2` -> "analyses"; None
    outside the strata."""
    parts = mutant_name.split(".")
    if len(parts) < 3 or parts[0] != PACKAGE:
        return None
    if parts[1:3] == ["equations", "compiled"]:
        return "compiled"
    return parts[1] if parts[1] in STRATA else None


def stratified_sample(names: list[str], per_dir: int | dict[str, int],
                      seed: int) -> dict[str, list[str]]:
    """`per_dir` names (an int, or a size per stratum) drawn without replacement from each
    stratum (all of a smaller one): each stratum's names, sorted, shuffled by a generator seeded
    with "seed/stratum", and the first `per_dir` kept. The same for the same names, size and seed
    whatever the order the names come in; a larger `per_dir` keeps the smaller sample and adds
    to it (a run can be extended)."""
    sizes = per_dir if isinstance(per_dir, dict) else {s: per_dir for s in STRATA}
    by_stratum: dict[str, list[str]] = {s: [] for s in STRATA}
    for name in names:
        stratum = stratum_of(name)
        if stratum is not None:
            by_stratum[stratum].append(name)
    out = {}
    for s, members in by_stratum.items():
        order = sorted(members)
        random.Random(f"{seed}/{s}").shuffle(order)
        out[s] = sorted(order[:sizes[s]])
    return out


def wilson_interval(detected: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson score interval of a proportion detected/n (Wilson 1927, JASA 22:209, eq. for
    the interval of a binomial proportion); (0, 1) when n is 0."""
    if n == 0:
        return 0.0, 1.0
    p = detected / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def stratified_score(rows: list[tuple[int, int, int]],
                     z: float = Z_95) -> tuple[float, float, float]:
    """Overall score from (in scope N_h, detected d_h, scored n_h) per stratum: sum of
    N_h/N * d_h/n_h, with a normal interval from the variance sum (N_h/N)^2 p_h (1-p_h)/n_h
    (1 - n_h/N_h) (Cochran, Sampling Techniques, 3rd ed., eq. 5.7 with the finite-population
    correction). Strata with nothing scored are left out of N."""
    rows = [r for r in rows if r[2] > 0]
    total = sum(r[0] for r in rows)
    if total == 0:
        return 0.0, 0.0, 1.0
    p = sum(n_h / total * d / n for n_h, d, n in rows)
    var = sum((n_h / total) ** 2 * (d / n) * (1 - d / n) / n * (1 - n / n_h) for n_h, d, n in rows)
    half = z * math.sqrt(var)
    return p, max(0.0, p - half), min(1.0, p + half)


def tally(statuses: list[str]) -> dict[str, int]:
    """Counts of killed (with segfault and type check), timeout, survived (with no tests), not
    checked (with interrupted and suspicious, left out of the score) and scored."""
    out = {"killed": 0, "timeout": 0, "survived": 0, "no tests": 0, "not checked": 0}
    for status in statuses:
        if status == "timeout":
            out["timeout"] += 1
        elif status in DETECTED:
            out["killed"] += 1
        elif status in UNDETECTED:
            out[status] += 1
        else:
            out["not checked"] += 1
    out["scored"] = out["killed"] + out["timeout"] + out["survived"] + out["no tests"]
    return out


# --- the shell: mutmut's files ---------------------------------------------------------------


def _generate() -> None:
    """mutmut's own generation step (what `mutmut run` does first; changed files only)."""
    import os

    from mutmut.__main__ import (copy_also_copy_files, copy_src_dir, create_mutants,
                                 setup_source_paths)
    from mutmut.mutation.trampoline import set_mutant_under_test

    set_mutant_under_test("mutant_generation")
    os.makedirs("mutants", exist_ok=True)
    copy_src_dir()
    copy_also_copy_files()
    setup_source_paths()
    create_mutants(1)


def _exit_codes() -> dict[str, int | None]:
    codes: dict[str, int | None] = {}
    for meta in sorted(Path("mutants/src").rglob("*.py.meta")):
        codes.update(json.loads(meta.read_text())["exit_code_by_key"])
    return codes


def _report(sample: dict[str, list[str]], codes: dict[str, int | None], seed: int) -> None:
    from mutmut.stats import status_by_exit_code

    in_scope = {s: 0 for s in STRATA}
    for name in codes:
        if (stratum := stratum_of(name)) is not None:
            in_scope[stratum] += 1
    print(f"seed {seed}; score = (killed + timeout) / scored; 95% Wilson interval")
    print(f"{'directory':<11}{'in scope':>9}{'sampled':>8}{'killed':>7}{'timeout':>8}"
          f"{'survived':>9}{'no tests':>9}{'unrun':>6}  score [95% CI]")
    rows, survivors = [], []
    for s in STRATA:
        statuses = [status_by_exit_code[codes[n]] for n in sample[s]]
        t = tally(statuses)
        det = t["killed"] + t["timeout"]
        lo, hi = wilson_interval(det, t["scored"])
        score = f"{det / t['scored']:.1%} [{lo:.1%}, {hi:.1%}]" if t["scored"] else "-"
        print(f"{s:<11}{in_scope[s]:>9}{len(sample[s]):>8}{t['killed']:>7}{t['timeout']:>8}"
              f"{t['survived']:>9}{t['no tests']:>9}{t['not checked']:>6}  {score}")
        rows.append((in_scope[s], det, t["scored"]))
        survivors += [(n, st) for n, st in zip(sample[s], statuses) if st in UNDETECTED]
    p, lo, hi = stratified_score(rows)
    print(f"overall (weighted by directory size): {p:.1%} [{lo:.1%}, {hi:.1%}]")
    print("\nundetected (`mutmut show NAME` for the change):")
    for name, status in survivors:
        print(f"  {name}: {status}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--per-dir", type=int, default=100, help="mutants drawn per directory")
    ap.add_argument("--size", action="append", default=[], metavar="DIR=N",
                    help="another sample size for one directory, e.g. evaluate=50 (repeatable)")
    ap.add_argument("--seed", type=int, default=20261126)
    ap.add_argument("--max-children", type=int, default=1, help="mutmut workers")
    ap.add_argument("--report", action="store_true", help="score what mutants/ holds; run nothing")
    ap.add_argument("--rerun", action="store_true",
                    help="run sampled mutants that already have a result again (default: keep it)")
    ap.add_argument("--rerun-undetected", action="store_true",
                    help="run the sampled mutants that survived or had no test again")
    ap.add_argument("--undetected-only", action="store_true",
                    help="with --rerun-undetected: run only those, not the ones without a result")
    args = ap.parse_args(argv)
    if not args.report:
        _generate()
    codes = _exit_codes()
    sizes = {s: args.per_dir for s in STRATA}
    for item in args.size:
        key, _, n = item.partition("=")
        if key not in sizes or not n.isdigit():
            ap.error(f"--size {item}: expected DIR=N with DIR one of {', '.join(STRATA)}")
        sizes[key] = int(n)
    sample = stratified_sample(list(codes), sizes, args.seed)
    if not args.report:
        names = [n for s in STRATA for n in sample[s]]
        Path("mutants/sample.txt").write_text("\n".join(names) + "\n")
        from mutmut.stats import status_by_exit_code

        undetected = {n for n in names if status_by_exit_code[codes[n]] in UNDETECTED}
        todo = [n for n in names if args.rerun or (n in undetected and args.rerun_undetected)
                or (codes[n] is None and not args.undetected_only)]
        mutmut = Path(sys.executable).with_name("mutmut")
        if todo:
            subprocess.run([str(mutmut), "run", "--max-children", str(args.max_children), *todo],
                           check=False)
        codes = _exit_codes()
    _report(sample, codes, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
