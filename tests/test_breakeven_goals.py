"""`optimus-calc breakeven`, continued: sensitivity, the match goal, the superchip and CPU
hosts, the solvers, bad input. The paper's example, its hand arithmetic (P_n, the window) and the
catalog values are in tests/test_breakeven.py's docstring; the constants come from there."""

import math

import pytest

from test_breakeven import BETA, LAYOUT, LAYOUT_M1, P_N, T_IN_BF3, req
from tests_support import cli, cli_json

# ---- sensitivity -------------------------------------------------------------------------------

def test_sensitivity_by_hand(run):
    """BlueField-2: the step exposes the optimizer, whose bandwidth is the cores' (8 x 2.5 GB/s);
    +1% per-core bandwidth gives min(20.48, 20.2) = 20.2 GB/s, T_opt / 1.01, and the step falls
    by the same seconds. GPU memory headroom moves only with the GPU's capacity C:
    elasticity C / (C - used)."""
    doc = cli_json("breakeven", *LAYOUT, "--device", "bluefield-2", "--sensitivity")
    sens = {(s["role"], s["parameter"]): s for s in doc["sensitivity"]}
    e = sens[("smartnic", "core_bandwidth_GBps")]["step_time_elasticity"]
    t_opt, t_step = doc["optimizer_s"], doc["step_time_s"]
    assert e == pytest.approx(t_opt * (1 / 1.01 - 1) / t_step / 0.01, rel=1e-6)  # about -0.485
    # memory bandwidth above the cores' draw: no effect
    assert sens[("smartnic", "memory_bandwidth_GBps")]["step_time_elasticity"] == 0.0
    head = sens[("gpu", "memory_GB")]
    used = doc["gpu_memory_bytes"]
    assert head["step_time_elasticity"] == 0.0
    assert head["gpu_headroom_elasticity"] == pytest.approx(80e9 / (80e9 - used), rel=1e-6)
    assert sens[("gpu", "peak_TFLOPS.bf16")]["gpu_headroom_elasticity"] is None
    # a faster GPU shortens the step's compute but also the window that hides the optimizer
    assert -1 < sens[("gpu", "peak_TFLOPS.bf16")]["step_time_elasticity"] < 0


@pytest.mark.parametrize("fmt", ["table", "csv"])
def test_sensitivity_formats(fmt):
    code, out, err = cli("breakeven", *LAYOUT, "--device", "bluefield-3", "--sensitivity",
                         "--format", fmt)
    assert code == 0, err
    if fmt == "csv":
        head = out.splitlines()[0]
        assert head == ("parameter,role,entry,unit,current,step_time_elasticity,"
                        "gpu_headroom_elasticity")
        assert "\npeak_TFLOPS.bf16,gpu,a100-80gb," in out
    else:
        assert "sensitivity of TP=2 PP=4 DP=2" in out and "GPU memory headroom" in out


def test_catalog_view_with_sensitivity_of_the_given_layout():
    doc = cli_json("breakeven", *LAYOUT, "--sensitivity")
    assert len(doc["devices"]) >= 5
    # no --offload: the layout keeps the optimizer on the GPU, so only GPU and network fields
    assert {s["role"] for s in doc["sensitivity"]} <= {"gpu", "intra_link", "nic",
                                                        "nic_host_link", "gpu_host_link"}


# ---- match, superchip, CPU ------------------------------------------------------------------

def test_match_against_the_same_layout_on_the_gpu():
    """Reference: this layout (one micro-batch per step) with the optimizer on the GPU.
    BlueField-3 hides its step there, so the offloaded step is the GPU layout's minus the GPU's
    exposed optimizer step: met; the memory bandwidth it needs solves
    P_n x 28 / (0.8 B) <= W_o - 2 T_in / 20 + (reference - the step without its optimizer),
    the update the slowest stage of the pipeline."""
    doc = cli_json("breakeven", *LAYOUT_M1, "--device", "bluefield-3", "--goal", "match",
                   "--reference", "same")
    ref = doc["reference"]
    assert ref["offload"] == "none" and ref["tp"] == 2 and ref["pp"] == 4
    assert doc["goal_met"] is True
    assert doc["margin"] == pytest.approx(ref["step_time_s"] - doc["step_time_s"])
    mem = req(doc, "memory_bandwidth_GBps")
    budget = doc["window_s"] - 2 * T_IN_BF3 / 20 + ref["step_time_s"] - (
        doc["step_time_s"] - doc["optimizer_exposed_s"])
    assert mem["required"] == pytest.approx(P_N * BETA / (0.8 * budget) / 1e9, rel=1e-9)
    assert mem["method"].startswith("closed form")


def test_match_best_layout_binds_elsewhere():
    """The best layout without offload (the planner's) is faster than this layout can be with
    any card: every parameter is never, and the binding says the rest of the step is longer."""
    doc = cli_json("breakeven", *LAYOUT, "--device", "alveo-v80", "--goal", "match")
    assert doc["reference"]["offload"] == "none"
    assert all(r["status"] == "never" and "already longer than the reference" in r["binding"]
               for r in doc["requirements"])


# SuperOffload as DeepSpeed >= v0.18.9 runs it with DeepSpeed's defaults (the tool's defaults
# follow the published v0.18.0 config instead: tests/test_superoffload_seed.py): all state on
# Grace, 1e9-element sub-groups, step() on 20% of the cores and copying every sub-group back
SUPERCHIP = ("llama8b", "--node", "gh200", "--nodes", "4", "--zero", "3", "--global-batch", "4",
             "--device", "grace", "--gpu-fraction", "0", "--assume", "zero_sub_group_params=1e9",
             "--assume", "superoffload_step_core_fraction=0.2",
             "--assume", "superoffload_param_copy=1")


def grace_phases(p_r: float, b_sock: float = 512e9) -> tuple[float, float]:
    """SuperOffload's step of one rank (evaluate/offload_schedules.py superoffload_step, bf16,
    no clipping), as (T_sp, T_post): the speculative part the backward hides but for the last
    sub-group, and what step() does after the backward. Catalog: grace (72 cores, 3.1 GHz, 32
    FP32 FLOPs/cycle, 512 GB/s at STREAM 0.8, 12 GB/s per core (assumed)), nvlink-c2c (450 GB/s
    at 0.66 = 297 GB/s), one GPU per node; assumptions: cpu_pass_efficiency 0.47,
    superoffload_core_fraction 0.8: the CPU-Adam worker 57.6 threads, the main process 14.4.
      worker B_r = min(0.47 x 0.8 x B_sock, 57.6 x 12e9) (192.5 GB/s at 512 GB/s)
      main   B_m = min(0.47 x 0.8 x B_sock, 14.4 x 12e9)  (172.8 GB/s at 512 GB/s)
      T_sp   = gradient 2 + 2 + 4 B over C2C + CPU-Adam 28 B / B_r (its 12 FLOP/param at
               57.6 x 3.1e9 x 32 never bind): P (8 / 297e9 + 28 / B_r)
      T_post = unscale 8 B + cast to 16 bits on the CPU 4 + 2 B over B_m, copy back 2 B over
               C2C: P (14 / B_m + 2 / 297e9); no overflow scan with bf16"""
    b_r = min(0.47 * 0.8 * b_sock, 57.6 * 12e9)
    b_m = min(0.47 * 0.8 * b_sock, 14.4 * 12e9)
    return p_r * (8 / 297e9 + 28 / b_r), p_r * (14 / b_m + 2 / 297e9)


def test_superchip_hide_is_never_last_bucket():
    """Grace on GH200 (SuperOffload): the CPU-Adam worker overlaps the last micro-batch's
    backward, but the last sub-group (zero_sub_group_params 1e9) and step()'s unscale and
    copy-back follow it (offload.exposed_superoffload_stv), so no hardware value hides the
    step: every parameter is "never" on the floor breakeven states, the same equation behind a
    backward of any length (T_sp min(1, Z_s / P_r) + T_post). TP1 PP1 DP4 ZeRO-3 of Llama 3 8B:
    P_r = all parameters / 4 = 2,007,565,312; T_sp = 0.346 s, T_post = 0.176 s by hand."""
    doc = cli_json("breakeven", *SUPERCHIP)
    assert doc["offload"] == "superchip" and doc["goal_met"] is False
    p_r = doc["model"]["total_params"] / 4
    t_sp, t_post = grace_phases(p_r)
    t_s = t_sp + t_post
    assert doc["optimizer_s"] == pytest.approx(t_s, rel=1e-9)              # 0.522 s
    assert doc["offload_transfer_s"] == pytest.approx(10 * p_r / 297e9, rel=1e-9)
    exposed = max(t_sp - doc["window_s"], t_sp * 1e9 / p_r) + t_post      # 0.349 s
    assert doc["optimizer_exposed_s"] == pytest.approx(exposed, rel=1e-9)
    floor = t_sp * 1e9 / p_r + t_post                                       # 0.349 s
    assert floor == pytest.approx(exposed, rel=1e-9)  # the 0.689 s window exceeds T_sp
    assert doc["margin"] == pytest.approx(-doc["optimizer_exposed_s"])
    for r in doc["requirements"]:
        assert r["status"] == "never" and r["method"].startswith("exposure floor")
        assert "last sub-group" in r["binding"] and f"{floor:.3g} s" in r["binding"]
    frac = cli_json("breakeven", *SUPERCHIP, "--gpu-fraction", "0.1")
    assert all(r["status"] == "never" and "--gpu-fraction" in r["binding"]
               for r in frac["requirements"])


def test_superchip_match_search_by_hand():
    """Match against the same model at PP 2 without offload (slower than the offloaded step's
    rest): Grace's memory bandwidth by the bracketing search over the evaluator, checked
    against the phases solved by hand. Exposed time may be reference - (step - exposed) =
    tau. Below 172.8 / 0.376 = 460 GB/s both processes draw B = 0.376 B_sock; the backward
    (window_s) hides T_sp but for the last 1e9-element sub-group, so the exposed time is
    1e9 (8 / 297e9 + 28 / B) + P (14 / B + 2 / 297e9) = tau:
    B = (28e9 + 14 P) / (tau - 1e9 x 8 / 297e9 - 2 P / 297e9), B_sock = B / 0.376."""
    doc = cli_json("breakeven", *SUPERCHIP, "--goal", "match", "--reference", "pp=2")
    mem = req(doc, "memory_bandwidth_GBps")
    assert mem["method"].startswith("bracketing search")
    p_r = doc["model"]["total_params"] / 4
    tau = doc["reference"]["step_time_s"] - (doc["step_time_s"] - doc["optimizer_exposed_s"])
    b = (28e9 + 14 * p_r) / (tau - 1e9 * 8 / 297e9 - 2 * p_r / 297e9)
    t_sp, _ = grace_phases(p_r, b / 0.376)
    assert b < 14.4 * 12e9 and t_sp - doc["window_s"] < t_sp * 1e9 / p_r
    assert mem["required"] == pytest.approx(b / 0.376 / 1e9, rel=2e-6)     # about 286 GB/s
    assert mem["status"] == "met"


def test_cpu_fit_host_memory():
    """ZeRO-Offload on the DGX A100's EPYC hosts: the node's offloaded state (8 GPUs x 4.54 B
    params x (12 optimizer + 4 fp32 gradients + 0 weights) = 581.25 GB) must fit host RAM
    less the reserved 10%: host_memory_GB >= 581.25 / 0.9 = 645.8 GB."""
    doc = cli_json("breakeven", *LAYOUT, "--device", "epyc-7742", "--goal", "fit")
    host = req(doc, "host_memory_GB")
    assert doc["offload_bytes_per_device"] == pytest.approx(8 * P_N * 16)
    assert host["required"] == pytest.approx(8 * P_N * 16 / 0.9 / 1e9, rel=1e-5)
    assert host["method"].startswith("bracketing search")


# ---- solvers ------------------------------------------------------------------------------------

def test_bracket_finds_threshold():
    from optimus_calc.analyses.breakeven import REL_TOL, bracket
    assert bracket(lambda v: v >= 3.7, 1.0, 1e-6, 1e6, False)[1] == pytest.approx(3.7,
                                                                                  rel=REL_TOL)
    assert bracket(lambda v: v >= 3.7, 100.0, 1e-4, 1e8, False)[1] == pytest.approx(
        3.7, rel=REL_TOL)
    assert bracket(lambda v: v >= 3.7, 1.0, 1.0, 64.0, True) == ("value", 4.0)
    assert bracket(lambda v: v >= 37, 40.0, 1.0, 64.0, True) == ("value", 37.0)
    assert bracket(lambda v: v >= 1e9, 1.0, 1e-6, 1e6, False) == ("never", None)
    assert bracket(lambda v: True, 1.0, 1e-6, 1e6, False) == ("any", 1e-6)


def test_invert_roofline_by_hand():
    """The update stage against its budget U in the pipeline (sym.update_goal),
    Max(0, Max(P b / Min(n B_c, eta x 1e9), P f / (n F)) - U) = 0 for x: the memory branch
    gives x = P b / (eta U) / 1e9 when it binds; P = 1e9, b = 28, eta = 0.8, U = 2 s ->
    17.5 GB/s; with 8 cores x 1 GB/s the cores cap the draw at 8 GB/s."""
    from optimus_calc.analyses.breakeven import sym as S
    expr = S.exposed_goal(True, S.BW, 1e9)
    vals = {S.Pn: 1e9, S.bpp: 28, S.fpp: 12, S.eta_m: 0.8, S.nthr: 8, S.B_core: 10e9,
            S.F_core: 44e9, S.F_dev: 0.0, S.U_up: 2.0}
    inv = S.invert(expr, vals, 0.0, 1e5)
    assert inv.value == pytest.approx(17.5, rel=1e-12) and inv.formula.startswith("x = ")
    never = S.invert(expr, {**vals, S.B_core: 1e9}, 0.0, 1e5)
    assert never.value is None and never.floor == pytest.approx(28 / 8 - 2)  # 3.5 s - 2 s
    pieces = S.binding_pieces(S.optimizer_roofline(True).subs(S.BW, 1e9 * S.X),
                              {**vals, S.B_core: 1e9}, 1e5)
    assert [sorted(s.name for s in p.free_symbols) for p in pieces] == [
        ["B_core", "P_n", "beta_p", "n_t"]]


def test_symbolic_agrees_with_search(cat):
    """The closed form and a bracketing search over the evaluator give the same bandwidth."""
    from optimus_calc.analyses import breakeven as B
    from optimus_calc.evaluate.context import fill_layout, resolve_hardware
    from optimus_calc.evaluate.strategies import device_params
    from optimus_calc.inputs import resolve_model
    from optimus_calc.specs.assumptions import Assumptions
    from optimus_calc.specs.training import Offload, Training, ZeroStage
    hw = resolve_hardware(cat, "dgx-a100", 2, smartnic="bluefield-3")
    lay = fill_layout(hw, 2, 4, None, 1, zero=ZeroStage(3), offload=Offload.SMARTNIC,
                      smartnic="bluefield-3")
    case = B.Case.of(resolve_model("llama70b", cat), hw, lay,  # LAYOUT_M1
                     Training(seq_len=2048, global_batch=16, micro_batch=8, recompute="full"),
                     Assumptions())
    res = B.solve_device(case, B.Goal.HIDE)
    mem = next(r for r in res.requirements if r.param.name == "memory_bandwidth_GBps")
    p = next(p for p in device_params(hw, Offload.SMARTNIC)
             if p.name == "memory_bandwidth_GBps")
    from optimus_calc.analyses.breakeven.problem import _Problem
    prob = _Problem(case, B.Goal.HIDE, None)
    status, found = B.bracket(lambda v: prob.ok(p, v), 83.2, 83.2e-6, 1e5, False)
    assert status == "value" and found == pytest.approx(mem.required, rel=2e-6)
    assert mem.method.startswith("closed form")


# ---- errors --------------------------------------------------------------------------------------

@pytest.mark.parametrize("args,match", [
    (("--goal", "cover"), "Invalid value for '--goal'"),
    (("--device", "bluefeild-2"), "unknown device"),
    (("--device", "a100-80gb"), "is a gpu; breakeven takes an offload device"),
    (("--device", "bluefield-2", "--offload", "none"), "--offload none"),
    (("--device", "bluefield-2", "--offload", "cpu"), "--offload cpu does not run on"),
    # the node (dgx-a100) has no superchip: refused for --offload superchip before the device
    (("--device", "epyc-7742", "--offload", "superchip"), "dgx-a100 is not a superchip node"),
    (("--device", "epyc-7742", "--offload", "superchip", "--node", "gh200", "--nodes", 8),
     "needs the CPU of a superchip node"),
    (("--device", "bluefield-2", "--reference", "same"), "--reference applies to --goal match"),
    (("--device", "bluefield-2", "--goal", "match", "--reference", "tp=x"),
     "expected a positive integer"),
    (("--device", "bluefield-2", "--goal", "match", "--reference", "colour=red"),
     "expected best, same or KEY=VALUE"),
    (("--device", "bluefield-2", "--goal", "match", "--reference", "tp=3"), "--tp 3"),
    (("--device", "bluefield-2", "--smartnic", "bluefield-3"), "disagree"),
])
def test_bad_input_exit_2(run, args, match):
    r = run("breakeven", *LAYOUT, *args)
    assert r.code == 2 and r.out == ""
    assert r.err.count("\n") == 1 and r.err.startswith("error: ") and match in r.err


def test_bare_model_exit_2(run):
    r = run("breakeven", "70B", "--nodes", "2", "--model-states-only", "--device", "bluefield-2")
    assert r.code == 2 and "architecture" in r.err


def test_values_are_finite_everywhere():
    doc = cli_json("breakeven", *LAYOUT, "--goal", "fit")
    for d in doc["devices"]:
        for r in d["requirements"]:
            for k in ("current", "required", "ratio"):
                assert r[k] is None or (math.isfinite(r[k]) and r[k] >= 0)


def test_sensitivity_plot(tmp_path):
    # issue 14: --plot draws the sensitivity bars (a valid PNG); without --sensitivity there is
    # no chart: exit 2
    out = tmp_path / "s.png"
    code, _, err = cli("breakeven", *LAYOUT, "--device", "bluefield-3", "--sensitivity",
                       "--plot", str(out))
    assert code == 0, err
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    code, _, err = cli("breakeven", *LAYOUT, "--device", "bluefield-3", "--plot",
                       str(tmp_path / "t.png"))
    assert code == 2 and "--sensitivity" in err


def test_a_named_reference_keeps_and_takes_the_experts_tp(run):
    # round 18: --reference KEY=VALUE kept every layout degree of the command but --etp (a
    # named reference of `--ep 4 --etp 2` ran ETP unset) and refused the key etp. Now the
    # key-less case keeps ETP 2, and etp= sets it (EP 8 x ETP 1 = 8 ranks of one DGX H100)
    base = ("breakeven", "qwen3-30b-a3b", "--node", "dgx-h100", "--zero", "3", "--goal",
            "match", "--device", "bluefield-3")
    kept = run(*base, "--ep", "4", "--etp", "2", "--reference", "tp=1")
    assert kept.code == 0 and "the named layout: TP=1 PP=1 DP=8 EP=4 ETP=2, ZeRO-3" in kept.out
    same = run(*base, "--ep", "4", "--etp", "2", "--reference", "same")
    ref = [ln for ln in kept.out.splitlines() if "vs reference" in ln]
    assert ref and ref == [ln for ln in same.out.splitlines() if "vs reference" in ln]
    named = run(*base, "--ep", "4", "--reference", "ep=8,etp=1")
    assert named.code == 0 and "the named layout: TP=1 PP=1 DP=8 EP=8 ETP=1, ZeRO-3" in named.out
