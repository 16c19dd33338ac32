"""`calibrate` CPU time against issue 37's targets (50 varied runs < 10 s CPU; 1,000 runs within a
stated bound), measured and printed, never asserted. Run: .venv/bin/python
benchmarks/calibrate_speed.py [DISTINCT...]

Runs files are synthetic and seeded: llama-2-7b on DGX A100 layouts (nodes, TP, PP, micro-batch,
sequence length, global batch drawn at random, refused layouts skipped) measured at 0.75-0.85x
today's prediction. Each file is calibrated in a fresh process; CPU = user + sys of that child
(os.wait4), so other users of a shared machine count less than in wall time.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import subprocess
import sys
import tempfile
import time

from optimus_calc.cli.main import main

HEADER = "model,node,nodes,tp,pp,micro_batch,seq_len,global_batch,framework,measured_tokens_per_s"


def _tokens(argv: list[str]) -> float | None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            main(argv)
        except SystemExit as exc:
            if exc.code:
                return None
    return json.loads(out.getvalue())["tokens_per_s"]


def layouts(n: int, seed: int = 5) -> list[str]:
    """``n`` distinct runnable layouts as CSV rows."""
    rng, seen, rows = random.Random(seed), set(), []
    while len(rows) < n:
        lay = (rng.choice("1248"), rng.choice("1248"), rng.choice("124"), rng.choice("124"),
               rng.choice(["1024", "2048", "4096"]), rng.choice(["256", "512", "1024"]))
        if lay in seen:
            continue
        seen.add(lay)
        t = _tokens(["step", "llama-2-7b", "--node", "dgx-a100", "--nodes", lay[0], "--tp", lay[1],
                     "--pp", lay[2], "--micro-batch", lay[3], "--seq-len", lay[4],
                     "--global-batch", lay[5], "--framework", "megatron", "--format", "json"])
        if t is not None:
            rows.append("llama-2-7b,dgx-a100,%s,%s,%s,%s,%s,%s,megatron,%%.6g" % lay
                        % (t * rng.uniform(0.75, 0.85)))
    return rows


def cpu_of(rows: list[str]) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as d:
        runs = os.path.join(d, "runs.csv")
        with open(runs, "w") as f:
            f.write(HEADER + "\n" + "\n".join(rows) + "\n")
        t0 = time.perf_counter()
        p = subprocess.Popen([sys.executable, "-m", "optimus_calc", "calibrate", runs, "-o",
                              os.path.join(d, "p.toml")], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(p.pid, 0)
        if os.waitstatus_to_exitcode(status):
            raise SystemExit("calibrate failed")
        return usage.ru_utime + usage.ru_stime, time.perf_counter() - t0


def main_() -> None:
    distinct = [int(a) for a in sys.argv[1:]] or [10, 50]
    pool = layouts(max(distinct + [50]))
    cases = {f"{n} varied runs": pool[:n] for n in distinct}
    cases["1,000 runs of one layout"] = pool[:1] * 1000
    cases["1,000 runs of 50 layouts (20 each)"] = [r for r in pool[:50] for _ in range(20)]
    for name, rows in cases.items():
        cpu, wall = cpu_of(rows)
        print(f"{name:40s} CPU {cpu:6.2f} s   wall {wall:6.2f} s")


if __name__ == "__main__":
    main_()
