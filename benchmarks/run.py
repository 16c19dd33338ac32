"""Speed targets of issues 6 and 15, measured (not asserted in tests). Run: make bench.

1. Cold start (issue 15): `plan llama70b --nodes 2` and `memory llama70b --nodes 2 --tp 8`, whole
   process (`python -m optimus_calc`), median of N interleaved runs each. "Cold" is a fresh
   interpreter with the bytecode cache written (one warm-up run first), as an installed package
   runs; the OS file cache is warm.
2. In-process evaluation throughput (layouts/s) of the vectorised equations.
3. `optimus-calc plan gpt3-175b --nodes 512 --node dgx-a100`, whole process.
4. Worst-case searches (issue 15): 720 nodes, global batch 99,792,000, 65,536-token sequences;
   wall seconds and the child's peak RSS (its own rusage, from os.wait4).

The machine is usually shared: compare medians taken in the same minute, not across days.
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import time

CLI = [sys.executable, "-m", "optimus_calc"]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # measure with the bytecode cache, as installed
    return env


def run_child(args: list[str]) -> tuple[float, int]:
    """One whole-process run: (wall seconds, peak RSS bytes of that child alone)."""
    t0 = time.perf_counter()
    p = subprocess.Popen([*CLI, *args], stdout=subprocess.DEVNULL, env=_env())
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit(f"optimus-calc {' '.join(args)} exited {p.returncode}")
    return wall, usage.ru_maxrss * 1024  # Linux reports kilobytes


def whole_process(args: list[str], runs: int) -> list[float]:
    return [run_child(args)[0] for _ in range(runs)]


def cold_start(commands: list[list[str]], runs: int) -> dict[str, list[float]]:
    """Interleaved runs, so load from other users of the machine hits every command alike."""
    for args in commands:  # warm-up: writes the bytecode cache, fills the file cache
        run_child(args)
    times: dict[str, list[float]] = {" ".join(a): [] for a in commands}
    for _ in range(runs):
        for args in commands:
            times[" ".join(args)].append(run_child(args)[0])
    return times


COLD = [["plan", "llama70b", "--nodes", "2"], ["memory", "llama70b", "--nodes", "2", "--tp", "8"]]
WORST = [["plan", m, "--nodes", "720", "--global-batch", "99792000", "--seq-len", "65536"]
         for m in ("llama-3-405b", "gpt-oss-120b")]


CASES = [("gpt3-175b", 512, 16384, 2048), ("llama-3-405b", 128, 8192, 32768),
         ("gpt3-175b", 64, 8192, 2048), ("llama-3-70b", 2, 512, 8192)]


def throughput(target: int = 1_000_000) -> tuple[int, float]:
    """Evaluate the planner's real layout spaces (enumerated, not tiled) until at least
    ``target`` layouts have been evaluated; returns (layouts, seconds of evaluation)."""
    from optimus_calc import catalog
    from optimus_calc.evaluate.context import resolve_hardware
    from optimus_calc.search.plan import offload_targets
    from optimus_calc.evaluate.batch import Batch
    from optimus_calc.evaluate.engine import evaluate
    from optimus_calc.search.plan import CHUNK_ELEMENTS
    from optimus_calc.search.space import enumerate_space
    from optimus_calc.specs.training import Assumptions, Training

    def run(space, m, hw, tr):  # the planner's chunked evaluation, without the ranking
        for chunk in space.chunks(max(1, CHUNK_ELEMENTS // (4 * space.switch_count))):
            evaluate(Batch.from_columns(chunk.views()), m, hw, tr, Assumptions())

    cat = catalog.load(())
    work = []
    for name, nodes, gb, seq in CASES:
        m = cat.get(name, "model")
        hw = resolve_hardware(cat, "dgx-a100", nodes)
        space = enumerate_space(m, hw.gpus, hw.gpus_per_node, gb, seq, offload_targets(hw))
        work.append((space, m, hw, Training(seq_len=seq, global_batch=gb)))
    for space, m, hw, tr in work:  # warm-up
        run(space, m, hw, tr)
    done, secs = 0, 0.0
    while done < target:
        for space, m, hw, tr in work:
            t0 = time.perf_counter()
            run(space, m, hw, tr)
            secs += time.perf_counter() - t0
            done += len(space)
    return done, secs


def main() -> int:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next(line.split(":", 1)[1].strip() for line in fh if "model name" in line)
    except (OSError, StopIteration):
        pass
    print(f"machine: {os.cpu_count()} cores, {cpu}, Python {platform.python_version()}, "
          f"load average {os.getloadavg()[0]:.2f}")
    for cmd, t in cold_start(COLD, 11).items():
        print(f"cold start, {cmd} (whole process): median {statistics.median(t):.3f} s, "
              f"min {min(t):.3f} s, max {max(t):.3f} s over {len(t)} runs (target <= 0.12 s idle)")
    n, secs = throughput()
    print(f"one evaluator over the planner's spaces: {n:,} layouts in {secs:.3f} s = {n / secs:,.0f} layouts/s "
          "(target >= 1,000,000/s)")
    t = whole_process(["plan", "gpt3-175b", "--nodes", "512", "--node", "dgx-a100"], 3)
    print(f"plan gpt3-175b --nodes 512 (4,096 GPUs, whole process): median "
          f"{statistics.median(t):.3f} s (target < 3 s)")
    for args in WORST:
        wall, rss = run_child(args)
        print(f"worst case, {' '.join(args)}: {wall:.2f} s, peak RSS {rss / 2**20:,.0f} MiB "
              "(target <= 1 s, <= 1 GiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
