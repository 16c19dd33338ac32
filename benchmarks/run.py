"""Speed targets of issue 6, measured (not asserted in tests). Run: make bench.

1. `optimus-calc plan llama70b --nodes 2`, whole process, cold: median of N runs.
2. In-process evaluation throughput (layouts/s) of the vectorised equations.
3. `optimus-calc plan gpt3-175b --nodes 512 --node dgx-a100`, whole process.
"""

from __future__ import annotations

import os
import platform
import shutil
import statistics
import subprocess
import sys
import time



def whole_process(args: list[str], runs: int) -> list[float]:
    exe = shutil.which("optimus-calc", path=os.path.dirname(sys.executable)) or "optimus-calc"
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([exe, *args], check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return times


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
    print(f"machine: {os.cpu_count()} cores, {cpu}, Python {platform.python_version()}")
    t = whole_process(["plan", "llama70b", "--nodes", "2"], 7)
    print(f"plan llama70b --nodes 2 (whole process): median {statistics.median(t):.3f} s, "
          f"min {min(t):.3f} s, max {max(t):.3f} s over {len(t)} runs (target < 1.0 s)")
    n, secs = throughput()
    print(f"one evaluator over the planner's spaces: {n:,} layouts in {secs:.3f} s = {n / secs:,.0f} layouts/s "
          "(target >= 1,000,000/s)")
    t = whole_process(["plan", "gpt3-175b", "--nodes", "512", "--node", "dgx-a100"], 3)
    print(f"plan gpt3-175b --nodes 512 (4,096 GPUs, whole process): median "
          f"{statistics.median(t):.3f} s (target < 3 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
