"""`optimus-calc breakeven`: what an offload device needs to hide its step, hold its shard or
match a layout without offload; the closed forms, the search, the catalog view, sensitivity.

The paper's example throughout (seeds/optimusnic.md section 4.1): Llama 3 70B on two DGX A100,
TP2 PP4 DP2 ZeRO-3. Hand arithmetic for its last pipeline stage (the one that binds the step):
20 layers x (attention 8192 x 10240 + 8192 x 8192 = 150,994,944; SwiGLU MLP 3 x 8192 x 28672 =
704,643,072; two norms 16,384) + final norm 8192 + LM head 128256 x 8192 = 1,050,673,152.
Per TP rank the matrices halve, norms stay whole: 8,556,380,160 + 327,680 + 525,336,576 + 8192
= 9,082,052,608 parameters; ZeRO-3 over DP = 2: P_n = 4,541,026,304 per GPU, one card per GPU.
Optimizer state 12 B/param: 54,492,315,648 bytes per card.

OptimusNIC's exposure (optimusnic.exposed_time) is max(0, T_pipe - W_o), T_pipe the card's
per-layer pipeline (optimusnic.pipeline_time): the slowest of gradient in (T_in), update (T_up,
compute.optimizer_step_time) and weights out (T_out), plus one layer's passage through the other
two (their sum / n_L, n_L = 20 layers in the stage). W_o = the LAST micro-batch's backward + the
next step's first forward. The issue's command (global batch 16, micro-batch 1, DP 2) has 8
micro-batches, so W_o = (forward + backward) / 8 = 0.768 s (the causal attention core timed at
the half a fused kernel executes). LAYOUT_M1 is the same layout with
micro-batch 8: one micro-batch per step, W_o = the whole forward + backward (5.41 s).

Catalog values (hardware_catalog/smartnics/smartnics.toml, links/links.toml): BlueField-2 8
cores x core_bandwidth_GBps 2.5 (assumed) = 20 GB/s < 0.8 x 25.6 = 20.48 GB/s of DDR4: the
cores bind; BlueField-3 16 x 5 = 80 GB/s > 0.8 x 83.2 = 66.56 GB/s: the DDR5 binds; pcie4-x16
31.5 GB/s and pcie5-x16 63 GB/s, both at efficiency 0.76.
"""

import json
import math

import pytest

from tests_support import cli, cli_json  # noqa: F401 (one in-process runner)

LAYOUT = ("llama70b", "--nodes", "2", "--tp", "2", "--pp", "4", "--zero", "3", "--recompute",
          "full", "--seq-len", "2048", "--global-batch", "16")
LAYOUT_M1 = LAYOUT + ("--micro-batch", "8")  # 16 / (DP 2 x 8) = one micro-batch per step
P_N = 4_541_026_304          # parameters per card (module docstring)
STATE = P_N * 12             # 54,492,315,648 bytes
BETA = 28                    # fused Adam with bf16 gradients: 12 + 2 + 12 + 2 bytes/param
PCIE4 = 31.5e9 * 0.76        # pcie4-x16 x its catalog efficiency: 23.94 GB/s
PCIE5 = 63.0e9 * 0.76        # pcie5-x16: 47.88 GB/s
T_OPT_BF2 = P_N * BETA / 20e9                            # the cores' 20 GB/s: 6.35744 s


def t_link(card_params, cap, card_link, gpu_params=P_N):
    """optimusnic.gradient_in_time (= weights_out_time with 2-byte weights): the slower of each
    GPU's own link (its shard's 2 B/param) and the card's (the shards it serves, 2 B/param, and
    the spill, state beyond the card's capacity, read in; written back on the way out)."""
    spill = max(0.0, card_params * 12 - cap)
    return max(gpu_params * 2 / PCIE4, (card_params * 2 + spill) / card_link)


def t_pipe(t_in, t_up, t_out, n_l=20):
    """optimusnic.pipeline_time: the slowest stage + the other two's per-layer times."""
    m = max(t_in, t_up, t_out)
    return m + (t_in + t_up + t_out - m) / n_l


# BlueField-2, one card per GPU: (9.082 + 38.492) GB / 23.94 GB/s = 1.98723 s each way
T_IN_BF2 = t_link(P_N, 16e9, PCIE4)
# BlueField-3: max(9.082 / 23.94 = 0.3794, (9.082 + 22.492) / 47.88 = 0.6594) = 0.6594 s
T_IN_BF3 = t_link(P_N, 32e9, PCIE5)
PIPE_BF2 = t_pipe(T_IN_BF2, T_OPT_BF2, T_IN_BF2)         # 6.35744 + 2 x 1.98723 / 20 = 6.556 s


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


def exposed_with_copy(run, tmp_path, cat, base: str, name: str, *extra, layout=LAYOUT,
                      **fields) -> float:
    d = tmp_path / name
    d.mkdir()
    (d / "card.toml").write_text(card_toml(cat, base, name, **fields))
    r = run("--catalog-dir", d, "step", *layout, "--offload", "smartnic", "--smartnic", name,
            *extra, "--format", "json")
    assert r.code == 0, r.err
    return r.json()["optimizer_exposed_s"]


def step_json(run, layout, card: str, *extra) -> dict:
    r = run("step", *layout, "--offload", "smartnic", "--smartnic", card, *extra,
            "--format", "json")
    assert r.code == 0, r.err
    return r.json()


# ---- the done-when test ------------------------------------------------------------------------

def test_done_when_bluefield2_hide_json(run, tmp_path, cat):
    """The issue's command, exactly. BlueField-2's memory-bandwidth entry is "never", for two
    reasons the binding names: the 8 cores draw 8 x 2.5 = 20 GB/s < 0.8 x 25.6 = 20.48 GB/s of
    DDR4, so the roofline's min() is the cores' already (the update stays P_n x 28 / 20e9 =
    6.357 s); and its link stages (gradients in and the 38.5 GB spill read over one Gen4 link,
    1.987 s, T_IN_BF2) alone overrun the 0.768 s window. The card's pipeline is 6.357 + 2 x
    1.987 / 20 = 6.556 s (PIPE_BF2). A user-catalog copy with 1000 x the memory bandwidth
    exposes exactly as much as the card."""
    r = run("breakeven", *LAYOUT, "--device", "bluefield-2", "--goal", "hide", "--format",
            "json")
    assert r.code == 0, r.err
    doc = r.json()
    for entry in doc["requirements"]:
        assert {"parameter", "unit", "current", "required", "ratio", "method",
                "binding"} <= set(entry)
    step = step_json(run, LAYOUT, "bluefield-2")
    window = (step["forward_s"] + step["backward_s"]) / 8        # about 0.768 s
    assert doc["window_s"] == pytest.approx(window, rel=1e-12)
    assert doc["gradient_in_s"] == pytest.approx(T_IN_BF2, rel=1e-9)
    assert doc["weights_out_s"] == pytest.approx(T_IN_BF2, rel=1e-9)
    assert doc["optimizer_s"] == pytest.approx(T_OPT_BF2, rel=1e-12)
    assert doc["pipeline_s"] == pytest.approx(PIPE_BF2, rel=1e-9)
    assert doc["optimizer_exposed_s"] == pytest.approx(PIPE_BF2 - window, rel=1e-9)
    mem = req(doc, "memory_bandwidth_GBps")
    assert mem["unit"] == "GB/s" and mem["current"] == 25.6
    assert mem["required"] is None and mem["ratio"] is None and mem["status"] == "never"
    assert "sympy" in mem["method"] and "optimusnic.pipeline_time" in mem["method"]
    assert "core_bandwidth_GBps x cores hold the card's step at 6.36 s" in mem["binding"]
    assert "gradient in 1.99 s, weights out 1.99 s over 20 layers) alone already fill the " \
        f"{window:.3g} s window" in mem["binding"]
    joint = req(doc, "memory_bandwidth_GBps+core_bandwidth_GBps")
    assert joint["current"] == pytest.approx(20.0) and joint["status"] == "never"
    assert "alone already fill" in joint["binding"]
    fast = exposed_with_copy(run, tmp_path, cat, "bluefield-2", "bf2-fast",
                             memory_bandwidth_GBps=25.6e3)
    assert fast == pytest.approx(doc["optimizer_exposed_s"], rel=1e-12) and fast > 5.7


def test_cards_per_node_round_trip_bluefield2(run):
    """An integer requirement: the fewest BlueField-2 cards per node that hide the step. With k
    cards each holds 8 P_n / k parameters; its update is 8 P_n / k x 28 B / 20 GB/s (the
    cores); its link stages the slower of the GPU's own link (P_n x 2 B / 23.94 GB/s = 0.379 s,
    whatever k) and the card's (8 P_n / k x 2 B + the spill max(0, 8 x 54.49 GB / k - 16 GB))
    / 23.94 GB/s; the pipeline the slowest + the others / 20 layers. The smallest k whose
    pipeline fits in W_o, by hand below, on both the issue's command (8 micro-batches, W_o =
    0.768 s: the GPU's own 0.379 s leave room now that the stages overlap) and one micro-batch
    per step; the evaluator agrees: k cards expose nothing, k - 1 expose some."""
    for layout, per_step in ((LAYOUT_M1, 1), (LAYOUT, 8)):
        step = step_json(run, layout, "bluefield-2")
        window = (step["forward_s"] + step["backward_s"]) / per_step

        def hand(k):
            card = 8 * P_N / k
            link = t_link(card, 16e9, PCIE4)
            return t_pipe(link, card * BETA / 20e9, link)
        k = next(n for n in range(1, 1000) if hand(n) <= window)
        need = req(cli_json("breakeven", *layout, "--device", "bluefield-2"),
                   "smartnics_per_node")
        assert need["method"].startswith("exact search over integers")
        assert need["required"] == k and need["ratio"] == pytest.approx(k / 8)

        def exposed(n):
            return step_json(run, layout, "bluefield-2", "--smartnics-per-node",
                             n)["optimizer_exposed_s"]
        assert exposed(k) == 0.0 and exposed(k - 1) > 0.0


def test_memory_bandwidth_round_trip_bluefield3(run, tmp_path, cat):
    """BlueField-3's memory bandwidth binds its update (16 x 5 = 80 GB/s of cores against
    0.8 x 83.2 = 66.56 GB/s of DDR5). On the issue's command it is "never": at any DDR
    bandwidth the cores' 80 GB/s hold the update at P_n x 28 / 80e9 = 1.59 s, more than the
    0.768 - 2 x 0.659 / 20 = 0.702 s the window leaves it (the window: the causal attention core
    at the half the fused kernel executes, compute.causal_attention_flops). With one micro-batch per step
    (LAYOUT_M1) the required memory_bandwidth_GBps is the memory branch of
    compute.optimizer_step_time with the update the slowest stage,
    P_n x 28 / (0.8 x (W_o - 2 T_in / 20)), about 28.7 GB/s, and round-trips through a
    user-catalog copy: 1.01 x required hides the step, 0.99 x leaves some exposed."""
    now = req(cli_json("breakeven", *LAYOUT, "--device", "bluefield-3"),
              "memory_bandwidth_GBps")
    assert now["status"] == "never"
    assert "core_bandwidth_GBps x cores hold the card's step at 1.59 s > the 0.702" \
        in now["binding"]
    doc = cli_json("breakeven", *LAYOUT_M1, "--device", "bluefield-3")
    mem = req(doc, "memory_bandwidth_GBps")
    step = step_json(run, LAYOUT_M1, "bluefield-3")
    window = step["forward_s"] + step["backward_s"]                 # about 5.41 s
    assert doc["window_s"] == pytest.approx(window, rel=1e-12)
    assert doc["gradient_in_s"] == pytest.approx(T_IN_BF3, rel=1e-9)
    budget = window - 2 * T_IN_BF3 / 20
    required = P_N * BETA / (0.8 * budget) / 1e9
    assert P_N * BETA / (0.8 * required * 1e9) > T_IN_BF3   # the update is the slowest stage
    assert 0.8 * required < 80                      # the cores still do not bind there
    assert mem["required"] == pytest.approx(required, rel=1e-9)
    assert mem["method"].startswith("closed form")
    assert mem["status"] == "met" and mem["ratio"] == pytest.approx(required / 83.2)
    up = exposed_with_copy(run, tmp_path, cat, "bluefield-3", "bf3-up", layout=LAYOUT_M1,
                           memory_bandwidth_GBps=mem["required"] * 1.01)
    down = exposed_with_copy(run, tmp_path, cat, "bluefield-3", "bf3-down", layout=LAYOUT_M1,
                             memory_bandwidth_GBps=mem["required"] * 0.99)
    assert up == 0.0 and down > 0.0


def test_both_bandwidths_round_trip_bluefield2(run, tmp_path, cat):
    """BlueField-2 with one micro-batch per step: its memory bandwidth alone is still never (the
    cores hold the update at 6.36 s > the 5.60 - 2 x 1.987 / 20 = 5.40 s the window leaves
    it); the combined row (memory and per-core bandwidth raised together, the achievable 20
    GB/s) needs A = P_n x 28 / (W_o - 2 T_in / 20), about 23.5 GB/s (1.18x), and a
    user-catalog copy with both bandwidths at 1.01 x that factor hides the step while 0.99 x
    does not."""
    doc = cli_json("breakeven", *LAYOUT_M1, "--device", "bluefield-2")
    step = step_json(run, LAYOUT_M1, "bluefield-2")
    window = step["forward_s"] + step["backward_s"]
    budget = window - 2 * T_IN_BF2 / 20
    mem = req(doc, "memory_bandwidth_GBps")
    assert mem["status"] == "never"
    assert mem["binding"].startswith(
        f"core_bandwidth_GBps x cores hold the card's step at 6.36 s > the {budget:.3g} s the "
        f"{window:.3g} s window leaves the update stage after the link stages (gradient in "
        "1.99 s, weights out 1.99 s over 20 layers)")
    joint = req(doc, "memory_bandwidth_GBps+core_bandwidth_GBps")
    assert joint["current"] == pytest.approx(20.0)
    required = P_N * BETA / budget / 1e9
    assert joint["required"] == pytest.approx(required, rel=1e-9)
    assert joint["ratio"] == pytest.approx(required / 20.0) and joint["status"] == "short"
    k = joint["ratio"]
    up = exposed_with_copy(run, tmp_path, cat, "bluefield-2", "bf2-up", layout=LAYOUT_M1,
                           memory_bandwidth_GBps=25.6 * k * 1.01,
                           core_bandwidth_GBps=2.5 * k * 1.01)
    down = exposed_with_copy(run, tmp_path, cat, "bluefield-2", "bf2-down", layout=LAYOUT_M1,
                             memory_bandwidth_GBps=25.6 * k * 0.99,
                             core_bandwidth_GBps=2.5 * k * 0.99)
    assert up == 0.0 and down > 0.0


def test_fpga_two_tier_binding_by_hand():
    """The Alveo V80's state (54.49 GB) overflows its 32 GB HBM into the DDR4: the card reads
    at the tiers' mixed bandwidth, 1 / (f / 460 + (1 - f) / 25.6) GB/s with f = 32 / 54.49 =
    0.5872 in HBM: 57.47 GB/s, so its step is P_n x 28 / (0.85 x 57.47e9) = 2.603 s. The fabric's
    FLOPs never bind (P_n x 12 / 5e12 = 0.011 s), and no fabric throughput hides the step:
    the binding names the two tiers at that 2.6 s, not the HBM alone (0.325 s), against the
    0.768 - 2 x 0.379 / 20 = 0.730 s the window leaves the update (no spill: 64 GB hold the
    state, so the link stages are the GPU's own 9.08 GB / 23.94 GB/s = 0.379 s)."""
    doc = cli_json("breakeven", *LAYOUT, "--device", "alveo-v80")
    f = 32e9 / STATE
    mixed = 1 / (f / 460e9 + (1 - f) / 25.6e9)
    assert doc["optimizer_s"] == pytest.approx(P_N * BETA / (0.85 * mixed), rel=1e-9)
    fab = req(doc, "fabric_fp32_TFLOPS")
    assert fab["status"] == "never" and fab["method"].startswith("closed form")
    assert fab["binding"].startswith("memory_bandwidth_GBps and expansion_bandwidth_GBps (mixed "
                                     "tiers) hold the card's step at 2.6 s > the 0.73 s")
    # the HBM bandwidth enters through the mixed tiers: searched, not solved
    assert req(doc, "memory_bandwidth_GBps")["method"].startswith("bracketing search")


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
    """The issue's setting (8 micro-batches, W_o = 0.768 s): no catalog card hides its step, each
    short by exactly its exposed time, and no card count would do (each GPU's own 0.759 s of
    transfers, test_cards_per_node_round_trip_bluefield2); the CPU never (ZeRO-Offload: window 0, every
    parameter "never" on the exposure floor). With one micro-batch per step BlueField-3 and the
    Alveo V80 hide it, and BlueField-2's cheapest fix is both bandwidths together."""
    doc = cli_json("breakeven", *LAYOUT)
    names = [d["device"] for d in doc["devices"]]
    assert names == [s.name for s in cat.all("smartnic")] + ["epyc-7742"]
    by = {d["device"]: d for d in doc["devices"]}
    cards = [by[n] for n in names[:-1]]
    window = cards[0]["window_s"]
    # test_done_when_...: (fwd + bwd) / 8; 0.787 s before the A100 curve's leave-one-source-out
    # refit (issue 32: eta_max 0.75, W_half 23.1, unfused attention 0.19)
    assert window == pytest.approx(0.768, abs=2e-3)
    for d in cards:
        assert d["goal_met"] is False and d["window_s"] == window
        assert d["margin"] == pytest.approx(d["window_s"] - d["pipeline_s"])
        assert d["margin"] == pytest.approx(-d["optimizer_exposed_s"])
    # more cards hide it now (test_cards_per_node_round_trip_bluefield2's hand(k)): the card
    # pipeline scales about as 1 / cards (67 per node: 0.7970 s, 68: 0.7853 s), so against the
    # 0.768 s window 69 leave about 0.774 s and 70 about 0.763 s: 70 / 8 per GPU (68 / 8 at the
    # 0.787 s window before issue 32's refit)
    assert by["bluefield-2"]["cards_per_gpu_required"] == pytest.approx(70 / 8)
    cpu = by["epyc-7742"]
    assert cpu["offload"] == "cpu" and cpu["window_s"] == 0.0 and cpu["goal_met"] is False
    assert cpu["margin"] == pytest.approx(-cpu["optimizer_exposed_s"])
    assert cpu["optimizer_exposed_s"] == pytest.approx(cpu["optimizer_s"])  # all of it
    assert all(r["status"] == "never" and "window 0 s" in r["binding"]
               and r["method"].startswith("exposure floor") for r in cpu["requirements"])

    m1 = {d["device"]: d for d in cli_json("breakeven", *LAYOUT_M1)["devices"]}
    for name in ("bluefield-3", "alveo-v80"):
        d = m1[name]
        assert d["goal_met"] is True and d["optimizer_exposed_s"] == 0.0
        assert d["margin"] == pytest.approx(d["window_s"] - d["pipeline_s"]) and d["margin"] > 0
    bf2 = m1["bluefield-2"]
    assert bf2["goal_met"] is False and bf2["margin"] == pytest.approx(
        -bf2["optimizer_exposed_s"])
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
    step: every parameter is "never" on the floor breakeven states (T_s min(1, Z_b / P_r), a
    lower bound of it). TP1 PP1 DP4 ZeRO-3 of Llama 3 8B: P_r = all parameters / 4 =
    2,007,565,312; T_sp = 0.346 s, T_post = 0.176 s by hand."""
    doc = cli_json("breakeven", *SUPERCHIP)
    assert doc["offload"] == "superchip" and doc["goal_met"] is False
    p_r = doc["model"]["total_params"] / 4
    t_sp, t_post = grace_phases(p_r)
    t_s = t_sp + t_post
    assert doc["optimizer_s"] == pytest.approx(t_s, rel=1e-9)              # 0.522 s
    assert doc["offload_transfer_s"] == pytest.approx(10 * p_r / 297e9, rel=1e-9)
    exposed = max(t_sp - doc["window_s"], t_sp * 1e9 / p_r) + t_post      # 0.349 s
    assert doc["optimizer_exposed_s"] == pytest.approx(exposed, rel=1e-9)
    floor = t_s * 5e8 / p_r                                                 # 0.130 s
    assert floor < exposed
    assert doc["margin"] == pytest.approx(-doc["optimizer_exposed_s"])
    for r in doc["requirements"]:
        assert r["status"] == "never" and r["method"].startswith("exposure floor")
        assert "last gradient bucket" in r["binding"] and f"{floor:.3g} s" in r["binding"]
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
    from optimus_calc.specs.training import Assumptions, Offload, Training, ZeroStage
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
