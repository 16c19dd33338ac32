"""`optimus-calc breakeven`: what an offload device needs to hide its step, hold its shard or
match a layout without offload; the closed forms, the search, the catalog view, sensitivity.

The paper's example throughout (seeds/optimusnic.md section 4.1): Llama 3 70B on two DGX A100,
TP2 PP4 DP2 ZeRO-3. Hand arithmetic for its last pipeline stage (the one that binds the step):
20 layers x (attention 8192 x 10240 + 8192 x 8192 = 150,994,944; SwiGLU MLP 3 x 8192 x 28672 =
704,643,072; two norms 16,384) + final norm 8192 + LM head 128256 x 8192 = 1,050,673,152.
Per TP rank the matrices halve, norms stay whole: 8,556,380,160 + 327,680 + 525,336,576 + 8192
= 9,082,052,608 parameters; ZeRO-3 over DP = 2: P_n = 4,541,026,304 per GPU, one card per GPU.
Optimizer state 12 B/param: 54,492,315,648 bytes per card.
"""

import contextlib
import io
import json
import math
from functools import lru_cache

import pytest

from optimus_calc.cli.main import main

LAYOUT = ("llama70b", "--nodes", "2", "--tp", "2", "--pp", "4", "--zero", "3", "--recompute",
          "full", "--seq-len", "2048", "--global-batch", "16")
P_N = 4_541_026_304          # parameters per card (module docstring)
STATE = P_N * 12             # 54,492,315,648 bytes
BETA = 28                    # fused Adam with bf16 gradients: 12 + 2 + 12 + 2 bytes/param
PCIE4 = 31.5e9 * 0.76        # pcie4-x16 x its catalog efficiency: 23.94 GB/s
PCIE5 = 63.0e9 * 0.76        # pcie5-x16: 47.88 GB/s


@lru_cache(maxsize=None)
def cli(*args: str):
    """Run the CLI in-process once per argument list; (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([str(a) for a in args])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return code, out.getvalue(), err.getvalue()


def cli_json(*args: str) -> dict:
    code, out, err = cli(*args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def req(doc: dict, parameter: str, role: str | None = None) -> dict:
    rows = [r for r in doc["requirements"] if r["parameter"] == parameter
            and (role is None or r["role"] == role)]
    assert len(rows) == 1, [r["parameter"] for r in doc["requirements"]]
    return rows[0]


def card_toml(cat, base: str, name: str, **fields) -> str:
    """A user-catalog copy of a catalog SmartNIC under a new name, some fields changed."""
    entry = cat.get(base, "smartnic").model_dump()
    entry.update(name=name, aliases=(), title=f"{base} copy", notes="", unverified=(),
                 assumed=(), source=f"test copy of {base}", **fields)
    lines = ["[[smartnic]]"]
    for k, v in entry.items():
        if isinstance(v, str):
            lines.append(f'{k} = "{v}"')
        elif isinstance(v, (tuple, list)):
            lines.append(f"{k} = [{', '.join(repr(x) for x in v)}]")
        else:
            lines.append(f"{k} = {v!r}")
    return "\n".join(lines) + "\n"


def exposed_with_copy(run, tmp_path, cat, base: str, name: str, *extra, **fields) -> float:
    d = tmp_path / name
    d.mkdir()
    (d / "card.toml").write_text(card_toml(cat, base, name, **fields))
    r = run("--catalog-dir", d, "step", *LAYOUT, "--offload", "smartnic", "--smartnic", name,
            *extra, "--format", "json")
    assert r.code == 0, r.err
    return r.json()["optimizer_exposed_s"]


# ---- the done-when test ------------------------------------------------------------------------

def test_done_when_bluefield2_hide_json(run, tmp_path, cat):
    """The issue's command. Its memory-bandwidth entry is "never": BlueField-2's 8 cores draw
    8 x 2.5 = 20 GB/s, less than 0.8 x 25.6 = 20.48 GB/s of DDR4, so the roofline's min() is the
    cores' already and more DRAM bandwidth changes nothing. The same card with both bandwidths
    raised together (the achievable-bandwidth entry) has a finite requirement, and a
    user-catalog copy at 1.01 x it hides the step while 0.99 x does not."""
    r = run("breakeven", *LAYOUT, "--device", "bluefield-2", "--goal", "hide", "--format",
            "json")
    assert r.code == 0, r.err
    doc = r.json()
    for entry in doc["requirements"]:
        assert {"parameter", "unit", "current", "required", "ratio", "method",
                "binding"} <= set(entry)
    mem = req(doc, "memory_bandwidth_GBps")
    assert mem["unit"] == "GB/s" and mem["current"] == 25.6
    assert mem["required"] is None and mem["ratio"] is None and mem["status"] == "never"
    assert "core_bandwidth_GBps x cores" in mem["binding"] and "sympy" in mem["method"]
    # the achievable bandwidth: 20 GB/s now; T_opt = P_n x 28 / A must fit in W - T_x
    joint = req(doc, "memory_bandwidth_GBps+core_bandwidth_GBps")
    assert joint["current"] == pytest.approx(20.0)
    step = run("step", *LAYOUT, "--offload", "smartnic", "--smartnic", "bluefield-2",
               "--format", "json").json()
    budget = step["forward_s"] + step["backward_s"] - step["offload_transfer_s"]
    assert joint["required"] == pytest.approx(P_N * BETA / budget / 1e9, rel=1e-9)
    assert joint["ratio"] == pytest.approx(joint["required"] / 20.0)
    k = joint["ratio"]
    up = exposed_with_copy(run, tmp_path, cat, "bluefield-2", "bf2-up",
                           memory_bandwidth_GBps=25.6 * k * 1.01,
                           core_bandwidth_GBps=2.5 * k * 1.01)
    down = exposed_with_copy(run, tmp_path, cat, "bluefield-2", "bf2-down",
                             memory_bandwidth_GBps=25.6 * k * 0.99,
                             core_bandwidth_GBps=2.5 * k * 0.99)
    assert up == 0.0 and down > 0.0


def test_done_when_memory_bandwidth_round_trip_bluefield3(run, tmp_path, cat):
    """The same command for BlueField-3, whose memory bandwidth binds (16 x 5 = 80 GB/s of cores
    against 0.8 x 83.2 = 66.56 GB/s of DDR5): the required memory_bandwidth_GBps, hand-derived
    from the memory branch of compute.optimizer_step_time, round-trips through a user-catalog
    copy: 1.01 x required hides the optimizer step, 0.99 x leaves some exposed."""
    doc = cli_json("breakeven", *LAYOUT, "--device", "bluefield-3", "--goal", "hide")
    mem = req(doc, "memory_bandwidth_GBps")
    step = run("step", *LAYOUT, "--offload", "smartnic", "--smartnic", "bluefield-3",
               "--format", "json").json()
    # transfers by hand: gradients in and weights out, 4 B/param, over the slower PCIe
    # (the GPU's Gen4), then the 22.49 GB spill read and written over the card's Gen5
    t_x = P_N * 4 / PCIE4 + 2 * (STATE - 32e9) / PCIE5
    assert step["offload_transfer_s"] == pytest.approx(t_x, rel=1e-9)        # 1.6983 s
    window = step["forward_s"] + step["backward_s"]
    required = P_N * BETA / (0.8 * (window - t_x)) / 1e9                   # about 32.2 GB/s
    assert mem["required"] == pytest.approx(required, rel=1e-9)
    assert mem["status"] == "met" and mem["ratio"] == pytest.approx(required / 83.2)
    up = exposed_with_copy(run, tmp_path, cat, "bluefield-3", "bf3-up",
                           memory_bandwidth_GBps=mem["required"] * 1.01)
    down = exposed_with_copy(run, tmp_path, cat, "bluefield-3", "bf3-down",
                             memory_bandwidth_GBps=mem["required"] * 0.99)
    assert up == 0.0 and down > 0.0


def test_cards_per_node_round_trip_bluefield2(run):
    """An integer requirement: the fewest BlueField-2 cards per node that hide the step;
    one card fewer does not."""
    need = req(cli_json("breakeven", *LAYOUT, "--device", "bluefield-2"), "smartnics_per_node")
    assert need["method"].startswith("exact search over integers")
    k = int(need["required"])
    assert need["required"] == k and k > 8

    def exposed(n):
        return run("step", *LAYOUT, "--offload", "smartnic", "--smartnic", "bluefield-2",
                   "--smartnics-per-node", n, "--format", "json").json()["optimizer_exposed_s"]
    assert exposed(k) == 0.0 and exposed(k - 1) > 0.0


# ---- fit -------------------------------------------------------------------------------------

def test_fit_capacity_closed_form_by_hand():
    """memory.spill_bytes = max(0, B_dev - C) = 0 at C = B_dev: BlueField-2 needs the whole
    54.49 GB shard (3.41 x its 16 GB, the paper's "significant yet insufficient"); the Alveo
    V80's 32 GB HBM + 32 GB DDR4 hold it with 9.5 GB to spare, so its HBM could shrink to
    54.49 - 32 = 22.49 GB; cards per node: 8 x 54.49 / 16 = 27.2 -> 28."""
    bf2 = cli_json("breakeven", *LAYOUT, "--device", "bluefield-2", "--goal", "fit")
    cap = req(bf2, "memory_GB")
    assert cap["required"] == pytest.approx(STATE / 1e9, rel=1e-12)
    assert cap["ratio"] == pytest.approx(STATE / 16e9, rel=1e-12)
    assert cap["method"] == "closed form (sympy.solve on memory.spill_bytes)"
    assert req(bf2, "smartnics_per_node")["required"] == 28
    assert bf2["goal_met"] is False
    assert bf2["spill_bytes_per_device"] == pytest.approx(STATE - 16e9)
    # bandwidths and clocks do not enter the fit goal
    assert "memory_bandwidth_GBps" in {p["parameter"] for p in bf2["not_entering"]}
    v80 = cli_json("breakeven", *LAYOUT, "--device", "alveo-v80", "--goal", "fit")
    assert v80["goal_met"] is True and v80["margin"] == pytest.approx(64e9 - STATE)
    assert req(v80, "memory_GB")["required"] == pytest.approx(STATE / 1e9 - 32, rel=1e-12)
    assert req(v80, "expansion_memory_GB")["status"] == "met"


# ---- catalog view ------------------------------------------------------------------------------

def test_catalog_view_every_device(cat):
    doc = cli_json("breakeven", *LAYOUT)
    names = [d["device"] for d in doc["devices"]]
    assert names == [s.name for s in cat.all("smartnic")] + ["epyc-7742"]
    by = {d["device"]: d for d in doc["devices"]}
    # BlueField-3 hides the step: margin = window - optimizer - transfers > 0
    bf3 = by["bluefield-3"]
    assert bf3["goal_met"] is True and bf3["optimizer_exposed_s"] == 0.0
    assert bf3["margin"] == pytest.approx(bf3["window_s"] - bf3["optimizer_s"]
                                          - bf3["offload_transfer_s"])
    # BlueField-2 does not, by exactly its exposed time; the CPU never does (window 0)
    bf2 = by["bluefield-2"]
    assert bf2["goal_met"] is False and bf2["margin"] == pytest.approx(-bf2["optimizer_exposed_s"])
    cpu = by["epyc-7742"]
    assert cpu["offload"] == "cpu" and cpu["window_s"] == 0.0 and cpu["goal_met"] is False
    assert all(r["status"] == "never" and "window 0 s" in r["binding"]
               for r in cpu["requirements"] if r["parameter"] != "host_memory_GB")
    assert bf2["limiting_parameter"] == "memory_bandwidth_GBps+core_bandwidth_GBps"


@pytest.mark.parametrize("fmt", ["table", "csv"])
def test_catalog_view_formats(fmt, cat):
    code, out, err = cli("breakeven", *LAYOUT, "--format", fmt)
    assert code == 0, err
    cards = [s.name for s in cat.all("smartnic")]
    if fmt == "csv":
        lines = out.strip().splitlines()
        assert lines[0].startswith("device,kind,offload,")
        assert [ln.split(",")[0] for ln in lines[1:]] == cards + ["epyc-7742"]
    else:
        assert all(name in out for name in cards) and "limiting parameter" in out


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
    """Reference: this layout with the optimizer on the GPU. BlueField-3 hides its step, so the
    offloaded step is the GPU layout's minus the GPU optimizer step: met."""
    doc = cli_json("breakeven", *LAYOUT, "--device", "bluefield-3", "--goal", "match",
                   "--reference", "same")
    ref = doc["reference"]
    assert ref["offload"] == "none" and ref["tp"] == 2 and ref["pp"] == 4
    assert doc["goal_met"] is True
    assert doc["margin"] == pytest.approx(ref["step_time_s"] - doc["step_time_s"])
    mem = req(doc, "memory_bandwidth_GBps")
    # the budget grows by the margin: T_opt <= W - T_x + (reference - step without optimizer)
    budget = doc["window_s"] - doc["offload_transfer_s"] + ref["step_time_s"] - (
        doc["step_time_s"] - doc["optimizer_exposed_s"])
    assert mem["required"] == pytest.approx(P_N * BETA / (0.8 * budget) / 1e9, rel=1e-9)


def test_match_best_layout_binds_elsewhere():
    """The best layout without offload (the planner's) is faster than this layout can be with
    any card: every parameter is never, and the binding says the rest of the step is longer."""
    doc = cli_json("breakeven", *LAYOUT, "--device", "alveo-v80", "--goal", "match")
    assert doc["reference"]["offload"] == "none"
    assert all(r["status"] == "never" and "already longer than the reference" in r["binding"]
               for r in doc["requirements"])


def test_superchip_grace_closed_form():
    """Grace on GH200 (SuperOffload, window = backward): the memory branch solved for Grace's
    bandwidth agrees with the roofline by hand, P_n x 28 / (0.8 x (W - T_x))."""
    args = ("llama8b", "--node", "gh200", "--nodes", "4", "--zero", "3", "--global-batch", "4",
            "--device", "grace")
    doc = cli_json("breakeven", *args)
    assert doc["offload"] == "superchip" and doc["goal_met"] is True
    mem = req(doc, "memory_bandwidth_GBps")
    assert mem["method"].startswith("closed form")
    # TP1 PP1 DP4 ZeRO-3, one GPU and one Grace per node: P_n = all parameters / 4; Grace draws
    # min(0.8 x 512, 72 x 12) = 409.6 GB/s
    p_n = doc["model"]["total_params"] / 4
    assert doc["optimizer_s"] == pytest.approx(p_n * BETA_HOST / 409.6e9, rel=1e-12)
    budget = doc["window_s"] - doc["offload_transfer_s"]
    assert mem["required"] == pytest.approx(p_n * BETA_HOST / (0.8 * budget) / 1e9, rel=1e-9)
    frac = cli_json("breakeven", *args, "--gpu-fraction", "0.1")
    assert all(r["status"] == "never" and "--gpu-fraction" in r["binding"]
               for r in frac["requirements"])


BETA_HOST = 30  # fused Adam with the host's fp32 gradients: 26 + 4 bytes/param


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
    from optimus_calc.evaluate.breakeven import REL_TOL, bracket
    assert bracket(lambda v: v >= 3.7, 1.0, 1e-6, 1e6, False)[1] == pytest.approx(3.7,
                                                                                  rel=REL_TOL)
    assert bracket(lambda v: v >= 3.7, 100.0, 1e-4, 1e8, False)[1] == pytest.approx(
        3.7, rel=REL_TOL)
    assert bracket(lambda v: v >= 3.7, 1.0, 1.0, 64.0, True) == ("value", 4.0)
    assert bracket(lambda v: v >= 37, 40.0, 1.0, 64.0, True) == ("value", 37.0)
    assert bracket(lambda v: v >= 1e9, 1.0, 1e-6, 1e6, False) == ("never", None)
    assert bracket(lambda v: True, 1.0, 1e-6, 1e6, False) == ("any", 1e-6)


def test_invert_roofline_by_hand():
    """Max(0, T_x - W + Max(P b / Min(n B_c, eta x 1e9), P f / (n F))) = 0 for x: the memory
    branch gives x = P b / (eta (W - T_x)) / 1e9 when it binds; P = 1e9, b = 28, eta = 0.8,
    W - T_x = 2 s -> 17.5 GB/s; with 8 cores x 1 GB/s the cores cap the draw at 8 GB/s."""
    from optimus_calc.evaluate import breakeven_sym as S
    expr = S.exposed_goal(True, S.BW, 1e9)
    vals = {S.Pn: 1e9, S.bpp: 28, S.fpp: 12, S.eta_m: 0.8, S.nthr: 8, S.B_core: 10e9,
            S.F_core: 44e9, S.F_dev: 0.0, S.T_x: 1.0, S.W_ov: 3.0, S.T_gpu: 0.0}
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
    from optimus_calc.evaluate import breakeven as B
    from optimus_calc.evaluate.context import fill_layout, resolve_hardware
    from optimus_calc.evaluate.hw_params import device_params
    from optimus_calc.inputs import resolve_model
    from optimus_calc.specs.training import Assumptions, Offload, Training, ZeroStage
    hw = resolve_hardware(cat, "dgx-a100", 2, smartnic="bluefield-3")
    lay = fill_layout(hw, 2, 4, None, 1, zero=ZeroStage(3), offload=Offload.SMARTNIC,
                      smartnic="bluefield-3")
    case = B.Case.of(resolve_model("llama70b", cat), hw, lay,
                     Training(seq_len=2048, global_batch=16, recompute="full"), Assumptions())
    res = B.solve_device(case, B.Goal.HIDE)
    mem = next(r for r in res.requirements if r.param.name == "memory_bandwidth_GBps")
    p = next(p for p in device_params(hw, Offload.SMARTNIC)
             if p.name == "memory_bandwidth_GBps")
    prob = B._Problem(case, B.Goal.HIDE, None)
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
    (("--device", "epyc-7742", "--offload", "superchip"), "needs the CPU of a superchip node"),
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
