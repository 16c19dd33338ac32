"""Speed targets of issue 22 (and the bounds of issue 15), measured and printed beside their
targets, never asserted. Run: make bench.

1. Cold start: `optimus-calc plan llama70b --nodes 2` as a whole process against
   `python -c "import numpy, pydantic, click, rich.console, rich.table"` (the libraries' own
   start-up), OPENBLAS_NUM_THREADS=1 on both, interleaved runs; the ratio is the median of the
   run-by-run ratios. "Cold" is a fresh interpreter with the bytecode cache written (one warm-up
   run first), as an installed package runs; the OS file cache is warm.
2. `--help` and `--version`, whole process.
3. In-process CPU throughput (time.process_time, so other users of a shared machine count less):
   `layouts_per_s_cpu` of the one evaluator over the default plan's space and over other planner
   spaces, and of the planner's whole search (`plan_search`) over the default plan's space.
4. The SmartNIC sizing of the default plan's recommendation (analyses.nics.size_nics), in-process.
5. `plan gpt3-175b --nodes 512 --node dgx-a100` and the worst-case searches (720 nodes, global
   batch 99,792,000, 65,536-token sequences): wall, CPU and the child's peak RSS (os.wait4).

The machine is usually shared: compare medians taken in the same minute, not across days.
"""

from __future__ import annotations

import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

_SCRIPT = os.path.join(os.path.dirname(sys.executable), "optimus-calc")
CLI = [_SCRIPT] if os.path.exists(_SCRIPT) else [sys.executable, "-m", "optimus_calc"]
LIBS = [sys.executable, "-c", "import numpy, pydantic, click, rich.console, rich.table"]
DEFAULT_PLAN = ["plan", "llama70b", "--nodes", "2"]
RUNS = int(os.environ.get("BENCH_RUNS", "11"))


def _env() -> dict[str, str]:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # measure with the bytecode cache, as installed
    return env


def run_child(argv: list[str]) -> tuple[float, float, int]:
    """One whole-process run: (wall s, CPU s = user + sys, peak RSS bytes of that child)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, env=_env())
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"{' '.join(argv)} exited {code}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024  # Linux: kilobytes


def interleaved(commands: dict[str, list[str]], runs: int) -> dict[str, list[tuple]]:
    """A B A B ... runs after one warm-up each, so load from other users hits all alike."""
    for argv in commands.values():
        run_child(argv)
    out: dict[str, list[tuple]] = {k: [] for k in commands}
    for _ in range(runs):
        for k, argv in commands.items():
            out[k].append(run_child(argv))
    return out


def _med(xs) -> float:
    return statistics.median(xs)


def cold_start(runs: int) -> None:
    t = interleaved({"plan": CLI + DEFAULT_PLAN, "libs": LIBS,
                     "help": CLI + ["--help"], "version": CLI + ["--version"]}, runs)
    ratio = [p[0] / q[0] for p, q in zip(t["plan"], t["libs"])]
    ratio_cpu = [p[1] / q[1] for p, q in zip(t["plan"], t["libs"])]
    for k, label in (("plan", "optimus-calc " + " ".join(DEFAULT_PLAN)),
                     ("libs", "import numpy, pydantic, click, rich.console, rich.table"),
                     ("help", "optimus-calc --help"), ("version", "optimus-calc --version")):
        w, c = [x[0] for x in t[k]], [x[1] for x in t[k]]
        print(f"whole process, {label}: wall median {_med(w):.3f} s (min {min(w):.3f}, max "
              f"{max(w):.3f}), CPU median {_med(c):.3f} s, {len(w)} runs"
              + ("  [target: no slower than the previous release, measured paired]"
                 if k in ("help", "version") else ""))
    print(f"cold-start ratio plan / libraries: wall median {_med(ratio):.2f}x (min "
          f"{min(ratio):.2f}, max {max(ratio):.2f}), CPU median {_med(ratio_cpu):.2f}x  "
          "[target <= 1.8x, aiming at 1.5x]")


CASES = [("gpt3-175b", 512, 16384, 2048), ("llama-3-405b", 128, 8192, 32768),
         ("gpt3-175b", 64, 8192, 2048), ("llama-3-70b", 2, 512, 8192)]


def default_plan_inputs():
    """The catalog and SearchInputs of `plan llama70b --nodes 2`, from the command's own
    option defaults (so the bench searches exactly what the command searches)."""
    from optimus_calc import catalog
    from optimus_calc.cli.plan_cmd import plan_cmd
    from optimus_calc.inputs import build_search_inputs

    ctx = plan_cmd.make_context("plan", DEFAULT_PLAN[1:])
    kw = dict(ctx.params)
    for k in ("model", "objective", "top", "export", "fmt", "output"):
        kw.pop(k, None)
    cat = catalog.load(())
    return cat, build_search_inputs(cat, DEFAULT_PLAN[1], kw)


def _space(m, hw, gb, seq, si=None):
    from optimus_calc.search.inputs import offload_targets
    from optimus_calc.specs.training import RECOMPUTE_CODES
    from optimus_calc.search.space import enumerate_space

    if si is None:
        return enumerate_space(m, hw.gpus, hw.gpus_per_node, gb, seq, offload_targets(hw))
    return enumerate_space(m, hw.gpus, hw.gpus_per_node, gb, seq,
                           si.offloads or offload_targets(hw),
                           zero_stages=tuple(range(si.max_zero + 1)),
                           recomputes=si.recomputes or RECOMPUTE_CODES, pins=si.pins)


def evaluate_space(space, m, hw, tr, asm, with_step: bool = True) -> None:
    """The one evaluator (memory and, with ``with_step``, step time of every layout) over
    ``space`` in the planner's chunks and with its stage table, without the ranking."""
    from optimus_calc.evaluate.batch import Batch
    from optimus_calc.evaluate.engine import evaluate
    from optimus_calc.evaluate.stages import sorted_unique, stage_table
    from optimus_calc.search.passes import CHUNK_ELEMENTS

    table = stage_table(m, sorted_unique(space.base[:, 1]), all_stages=False)
    rows = max(1, CHUNK_ELEMENTS // (space.switch_count * table.index.shape[1]))
    for chunk in space.chunks(rows):
        evaluate(Batch.from_columns(chunk.views()), m, hw, tr, asm, stages=table,
                 with_step=with_step)


def cpu_rate(fn, layouts: int, target_s: float = 2.0) -> tuple[int, float]:
    """Run ``fn`` (one warm-up) until ``target_s`` CPU seconds; (layouts done, CPU seconds)."""
    fn()
    done, secs = 0, 0.0
    while secs < target_s:
        t0 = time.process_time()
        fn()
        secs += time.process_time() - t0
        done += layouts
    return done, secs


def throughput(cat, si) -> None:
    from optimus_calc.evaluate.context import resolve_hardware
    from optimus_calc.search.plan import plan_search
    from optimus_calc.specs.assumptions import Assumptions
    from optimus_calc.specs.training import Training

    space = _space(si.model, si.hw, si.training.global_batch, si.training.seq_len, si)
    args = (si.model, si.hw, si.training, si.assumptions)
    for with_step, what in ((True, "memory + step time"), (False, "memory only, pass 1")):
        n, s = cpu_rate(lambda w=with_step: evaluate_space(space, *args, with_step=w), len(space))
        print(f"evaluator ({what}), default plan's space ({len(space):,} layouts): "
              f"layouts_per_s_cpu {n / s:,.0f} ({n:,} in {s:.2f} s CPU)  [target >= 10,000,000]")
    n, s = cpu_rate(lambda: plan_search(cat, si), len(space))
    print(f"planner's whole search (plan_search), default plan's space: layouts_per_s_cpu "
          f"{n / s:,.0f} ({n:,} in {s:.2f} s CPU)  [target >= 5,000,000, aiming at 10,000,000]")
    work = []
    for name, nodes, gb, seq in CASES:
        m = cat.get(name, "model")
        hw = resolve_hardware(cat, "dgx-a100", nodes)
        work.append((_space(m, hw, gb, seq), m, hw, Training(seq_len=seq, global_batch=gb)))
    total = sum(len(w[0]) for w in work)
    n, s = cpu_rate(lambda: [evaluate_space(sp, m, hw, tr, Assumptions())
                             for sp, m, hw, tr in work], total)
    print(f"evaluator (memory + step time), {len(CASES)} other planner spaces ({total:,} "
          f"layouts): layouts_per_s_cpu {n / s:,.0f} ({n:,} in {s:.2f} s CPU)  "
          "[target >= 10,000,000]")


def nic_sizing(cat, si, runs: int = 21) -> None:
    from optimus_calc.analyses.nics import size_nics
    from optimus_calc.search.plan import plan_search

    r = plan_search(cat, si).recommended
    call = lambda: size_nics(cat, si.model, si.hw, r.layout, r.training,  # noqa: E731
                             si.assumptions)
    call()
    wall, cpu = [], []
    for _ in range(runs):
        t0, c0 = time.perf_counter(), time.process_time()
        call()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    print(f"size_nics, default plan's recommendation: median {_med(wall) * 1e3:.1f} ms wall, "
          f"{_med(cpu) * 1e3:.1f} ms CPU over {runs} calls  [target < 4 ms]")


WORST = [["plan", m, "--nodes", "720", "--global-batch", "99792000", "--seq-len", "65536"]
         for m in ("llama-3-405b", "gpt-oss-120b")]


def big_plans() -> None:
    t = [run_child(CLI + ["plan", "gpt3-175b", "--nodes", "512", "--node", "dgx-a100"])
         for _ in range(3)]
    print(f"whole process, plan gpt3-175b --nodes 512 (4,096 GPUs): wall median "
          f"{_med([x[0] for x in t]):.3f} s, CPU median {_med([x[1] for x in t]):.3f} s  "
          "[target < 3 s]")
    for args in WORST:
        wall, cpu, rss = run_child(CLI + args)
        print(f"worst case, {' '.join(args)}: {wall:.2f} s wall, {cpu:.2f} s CPU, peak RSS "
              f"{rss / 2**20:,.0f} MiB  [target < 5 s CPU, < 1 GiB]")


def main() -> int:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next(line.split(":", 1)[1].strip() for line in fh if "model name" in line)
    except (OSError, StopIteration):
        pass
    print(f"machine: {os.cpu_count()} cores, {cpu}, Python {platform.python_version()}, "
          f"load average {os.getloadavg()[0]:.2f}; command: {shutil.which(CLI[0]) or CLI[0]}")
    cold_start(RUNS)
    os.environ["OPENBLAS_NUM_THREADS"] = os.environ.get("OPENBLAS_NUM_THREADS", "1")
    cat, si = default_plan_inputs()
    throughput(cat, si)
    nic_sizing(cat, si)
    big_plans()
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
