"""Issue 24: OptimusNIC's per-layer pipeline, the minimum card of `breakeven` and its saved
catalog entry, the planner's NIC sizing through the same pipeline.

The paper's example (seeds/optimusnic.md section 4.1): Llama 3 70B on two DGX A100, TP2 PP4
DP2 ZeRO-3, 8 micro-batches of one sequence of 2048 tokens; P_n = 4,541,026,304 optimizer
parameters per GPU in the last pipeline stage (20 layers), worked out in test_breakeven.py.
"""

import json

import pytest

from tests_support import cli, cli_json

LAYOUT = ("llama70b", "--nodes", "2", "--tp", "2", "--pp", "4", "--zero", "3", "--recompute",
          "full", "--seq-len", "2048", "--global-batch", "16")
P_N = 4_541_026_304
PCIE4 = 31.5e9 * 0.76
PCIE5 = 63.0e9 * 0.76


def test_pipeline_equations_by_hand():
    """optimusnic.pipeline_time with T_in = 1, T_up = 4, T_out = 2 over n_L = 10 layers:
    4 + (1 + 2) / 10 = 4.3 s; a 4 s window leaves 0.3 s exposed; gradient in: max(1e9 x 2 /
    10e9 = 0.2, (2 x 1e9 x 2 + 1e9) / 20e9 = 0.25) = 0.25 s."""
    from optimus_calc.equations import compiled as eq
    assert eq.optimusnic__pipeline_time(T_in=1.0, T_out=2.0, T_up=4.0, n_L=10) == \
        pytest.approx(4.3)
    assert eq.optimusnic__exposed_time(T_pipe=4.3, W_o=4.0) == pytest.approx(0.3)
    assert eq.optimusnic__exposed_time(T_pipe=3.0, W_o=4.0) == 0.0
    # the window: backward 2 + forward 1 + one micro-batch's share of 0.8 s of exposed DP time
    # over 8 micro-batches with ZeRO-2/3 (3.1 s), all of it with ZeRO-0/1 (3.8 s)
    assert eq.optimusnic__overlap_window(T_dp=0.8, W_b=2.0, W_f=1.0, Z=3, m=8) == \
        pytest.approx(3.1)
    assert eq.optimusnic__overlap_window(T_dp=0.8, W_b=2.0, W_f=1.0, Z=1, m=8) == \
        pytest.approx(3.8)
    assert eq.optimusnic__gradient_in_time(B_cl=20e9, B_gl=10e9, P_o=1e9, S_sp=1e9, b_gr=2,
                                           n_gc=2) == pytest.approx(0.25)


def test_explain_prints_the_pipeline_with_values():
    """`explain optimusnic.pipeline_time MODEL ...` shows the engine's inputs: BlueField-3 on
    the paper's layout, T_in = T_out = max(9.08 GB / 23.94, (9.08 + 22.49) GB / 47.88) =
    0.6594 s, n_L = 20."""
    code, out, err = cli("explain", "optimusnic.pipeline_time", *LAYOUT, "--offload",
                         "smartnic", "--smartnic", "bluefield-3", "--format", "json")
    assert code == 0, err
    d = json.loads(out)
    spill = P_N * 12 - 32e9
    t_in = max(P_N * 2 / PCIE4, (P_N * 2 + spill) / PCIE5)
    assert d["values"]["T_in"] == pytest.approx(t_in, rel=1e-9)
    assert d["values"]["n_L"] == 20
    # the update on the card, by hand: BlueField-3 (catalog) draws min(83.2 GB/s x 0.8 memory
    # efficiency, 16 cores x 5 GB/s) = 66.56 GB/s; Adam moves 28 B/param (cpu_adam.h):
    # 4,541,026,304 x 28 / 66.56e9 = 1.9103 s (its 12 FLOP/param are far below the clock's)
    t_up = P_N * 28 / (0.8 * 83.2e9)
    assert d["values"]["T_up"] == pytest.approx(t_up, rel=1e-6)
    # the slowest stage plus the other two over the stage's 20 layers: 1.9103 + 2 x 0.6594 / 20
    assert d["result"] == pytest.approx(t_up + 2 * t_in / 20, rel=1e-6)
    assert d["result"] == pytest.approx(1.976, abs=5e-4)


@pytest.mark.parametrize("card", ["bluefield-3", "alveo-v80"])
def test_minimum_card_round_trip(run, tmp_path, card):
    """The issue's done-when: a numeric multiple and a minimum card; the corner saved at 1.02 x
    hides the step in `step` (optimizer exposed 0), at 0.98 x it does not."""
    doc = cli_json("breakeven", *LAYOUT, "--device", card, "--goal", "hide")
    mc = doc["minimum_card"]
    assert mc["multiple"] is not None and mc["multiple"] > 1      # today's card falls short
    assert all(f["corner"] > 0 for f in mc["fields"])
    exposed = {}
    for scale in (1.02, 0.98):
        d = tmp_path / f"x{scale}"
        d.mkdir()
        path = d / "card.toml"
        r = run("breakeven", *LAYOUT, "--device", card, "--goal", "hide", "--save-card",
                path, "--save-scale", scale, "--format", "json", "-o", d / "out.json")
        assert r.code == 0, r.err
        name = f"{card}-min-hide-x{scale:g}".replace(".", "p")
        assert f'name = "{name}"' in path.read_text()
        s = run("--catalog-dir", d, "step", *LAYOUT, "--offload", "smartnic", "--smartnic",
                name, "--format", "json")
        assert s.code == 0, s.err
        exposed[scale] = s.json()["optimizer_exposed_s"]
    assert exposed[1.02] == 0.0 and exposed[0.98] > 0.0


def test_multiple_by_hand_bluefield3():
    """BlueField-3 at m x every field: no spill once m x 32 GB >= 54.49 GB; the update is
    P_n x 28 / (0.8 x 83.2 m GB/s) (the DDR binds: 16 x 5 m > 0.8 x 83.2 m); link stages
    max(P_n x 2 / 23.94 GB/s, P_n x 2 / (47.88 m)) = 0.3794 s for m >= 0.5. The pipeline fits
    the window when the update <= W - 2 x 0.3794 / 20 (the update the slowest stage), but the
    spill keeps the card's link busy below m = 54.49 / 32 = 1.70: at the multiple found the
    update is the binding stage, so m = P_n x 28 / (0.8 x 83.2e9 x (W - 0.03794))."""
    doc = cli_json("breakeven", *LAYOUT, "--device", "bluefield-3", "--goal", "hide")
    w = doc["window_s"]
    m = P_N * 28 / (0.8 * 83.2e9 * (w - 2 * P_N * 2 / PCIE4 / 20))
    assert m > 54.49 / 32  # no spill at the multiple: the hand formula holds
    assert doc["minimum_card"]["multiple"] == pytest.approx(m, rel=1e-5)


def test_gpu_side_binds_says_so_once():
    """Sequences of 512 and no recomputation shrink the window to 0.218 s; the GPU's own link
    needs 9.08 GB / 23.94 GB/s = 0.379 s for the gradients alone: no card hides that. The
    answer is one verdict with the changes that reach it, not a table of never."""
    args = ("llama70b", "--nodes", "2", "--tp", "2", "--pp", "4", "--zero", "3",
            "--recompute", "none", "--seq-len", "512", "--global-batch", "16", "--device",
            "alveo-v80")
    code, out, err = cli("breakeven", *args)
    assert code == 0, err
    assert "the GPU side binds" in out and "reachable with: a GPU-host link of" in out
    assert "micro-batches per step instead of 8" in out
    assert "never" not in out
    doc = cli_json("breakeven", *args)
    un = doc["minimum_card"]["unreachable"]
    assert doc["minimum_card"]["multiple"] is None and len(un["changes"]) == 3
    code, _, err = cli("breakeven", *args, "--save-card", "/nonexistent-dir/x.toml")
    assert code == 2 and "--save-card" in err


def test_no_layout_uses_the_planners():
    """Without a pinned layout breakeven studies the planner's what-if for the card (the issue:
    TP1 PP1 DP16 ZeRO-0 did not fit)."""
    doc = cli_json("breakeven", "llama70b", "--nodes", "2", "--device", "bluefield-2")
    assert doc["layout_fits"] is True
    assert doc["layout"]["tp"] * doc["layout"]["pp"] > 1 or doc["layout"]["zero"] > 0
    assert doc["layout_planned"] is True


def test_planner_nics_from_the_pipeline(cat):
    """`plan llama70b --nodes 2`'s cards/GPU (hide step) is the fewest cards per GPU whose
    pipeline the evaluator hides on every pipeline stage: that many and one fewer through the
    evaluator agree. The windows include the last micro-batch's exposed DP time (ZeRO-3: 0.2381 s
    over 8 micro-batches, each 3 passes x 180 modules x 50 us + 3 first gathers x 0.2268 ms + the
    last 2.078 ms bucket = 29.76 ms): the last stage's 0.7628 + 0.0298 = 0.7926 s (0.7985 s
    before the loss over the logits was timed and the A100 curve refitted with it). BlueField-3
    with 2 cards per GPU: update P_n / 2 x 28 / 66.56e9 = 0.955 s, pipeline 0.993 s, 0.194 s
    exposed, so 3 per GPU (also 3 against the 0.7628 s window without the DP tail);
    BlueField-2 needs 9 (10 without it)."""
    import numpy as np
    from optimus_calc.analyses.nics import _with_card, size_nics
    from optimus_calc.evaluate.batch import Batch
    from optimus_calc.evaluate.engine import evaluate
    from optimus_calc.evaluate.context import fill_layout, resolve_hardware
    from optimus_calc.inputs import resolve_model
    from optimus_calc.specs.assumptions import Assumptions
    from optimus_calc.specs.training import Offload, Training, ZeroStage
    hw = resolve_hardware(cat, "dgx-a100", 2)
    lay = fill_layout(hw, 2, 4, None, 1, zero=ZeroStage(3), offload=Offload.NONE)
    tr = Training(seq_len=2048, global_batch=16, recompute="full")
    model = resolve_model("llama70b", cat)
    sizing = {s.smartnic: s for s in size_nics(cat, model, hw, lay, tr, Assumptions())}
    assert sizing["bluefield-3"].window_s == pytest.approx(0.7926, abs=1e-4)
    assert sizing["bluefield-3"].nics_per_gpu_for_compute == 3
    assert sizing["bluefield-2"].nics_per_gpu_for_compute == 9
    for name in ("bluefield-3", "alveo-v80", "bluefield-2"):
        k = sizing[name].nics_per_gpu_for_compute
        assert k is not None

        def exposed(per_node):
            one = lay.model_copy(update={"offload": "smartnic", "smartnic": name,
                                         "smartnics_per_node": per_node})
            ev = evaluate(Batch.of(one, tr), model, _with_card(hw, cat, cat.get(name, "smartnic")),
                          tr, Assumptions(), all_stages=True)
            return np.asarray(ev.stage_terms["optimizer_exposed_s"])
        assert (exposed(8 * k) == 0.0).all()
        if k > 1:
            assert exposed(8 * (k - 1)).max() > 0.0


def test_sweep_global_batch_breakeven():
    """BlueField-3 on the paper's layout, 8 micro-batches per step: the window grows with the
    micro-batch (forward + backward / 8, the loss over the logits on the last stage included)
    plus the last micro-batch's exposed DP time (ZeRO-3: 0.240 s / 8 = 0.030 s at each): 0.792,
    1.450, 2.766 s (0.798, 1.460, 2.785 s before the loss was timed), the card's pipeline is
    1.976 s, so the exposed time is 1.976 - 0.792 = 1.184 s (1.208 s before the DP tail
    joined the window), then about 0.53 s, then 0 from global batch
    64 on; there the offloaded
    step is shorter than the same layout's with the optimizer on the GPU (which would not fit
    memory: ZeRO-3 with the state on the GPU needs 70 GB per GPU before activations)."""
    doc = cli_json("breakeven", *LAYOUT, "--device", "bluefield-3", "--sweep", "global-batch")
    sw = doc["batch_sweep"]
    rows = {r["global_batch"]: r for r in sw["rows"]}
    assert [rows[g]["micro_batches"] for g in (16, 32, 64)] == [8, 8, 8]
    assert rows[16]["optimizer_exposed_s"] == pytest.approx(1.976 - 0.792, abs=2e-3)
    assert rows[32]["optimizer_exposed_s"] > 0 and rows[64]["optimizer_exposed_s"] == 0.0
    assert rows[32]["pays_off"] is False and rows[64]["pays_off"] is True
    assert sw["breakeven_global_batch"] == 64
    assert rows[16]["gpu_fits"] is False


def test_breakeven_pipeline_shards_over_dp_x_cp():
    """With context parallelism the card's shard is the evaluator's (memory.zero_shard_degree):
    Llama-3-8B (8,030,261,248 parameters) on one DGX A100, CP 2 x DP 4, ZeRO-1: 8 ranks, shard
    1,003,782,656; gradients in, 2 B each over the GPU's PCIe Gen4 at 76% (23.94 GB/s):
    2 x 1,003,782,656 / 23.94e9 = 83.86 ms (sharded over DP alone it would be twice that).
    The layout is pinned (TP1 PP1, what the planner picks here): test_no_layout_uses_the_planners
    covers the planned layout."""
    d = cli_json("breakeven", "llama-3-8b", "--nodes", 1, "--tp", 1, "--pp", 1, "--cp", 2,
                 "--seq-len", 65536,
                 "--zero", 1, "--recompute", "full", "--device", "bluefield-3")
    found = []

    def walk(o):
        if isinstance(o, dict):
            found.extend(v for k, v in o.items() if k == "gradient_in_s")
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    walk(d)
    assert found and found[0] == pytest.approx(2 * 8_030_261_248 / 8 / (31.5e9 * 0.76), rel=1e-3)


def test_faster_gpu_never_slows_a_smartnic_step(tmp_path):
    """The property case (tests/test_properties_cli.py faster, 1500 cases) that found the double
    count: DeepSeek-V2 on 64 DGX B200, ZeRO-3, EP 2, FP8. The exposed DP time (42.57 s, the
    ZeRO-3 traffic over 512 ranks) and the card's exposure both subtracted the compute window
    and were added, so a GPU at efficiency 1.0 (forward + backward 0.143 -> 0.082 s) raised the
    step 43.135 -> 43.196 s (exposure 0.051 -> 0.112 s). The card runs while the GPU waits on
    that traffic: its window is W_o + 42.57 s, far above its pipeline (the update alone 0.194 s),
    so nothing of it is exposed and the faster GPU gives the shorter step (43.0838 s both, the
    DP tail taking what the compute gives up)."""
    args = ("step", "tests/data/hf/deepseek_v2", "--node", "dgx-b200", "--nodes", "64", "--tp",
            "1", "--pp", "1", "--zero", "3", "--recompute", "selective", "--seq-len", "512",
            "--micro-batch", "2", "--ep", "2", "--offload", "smartnic", "--precision", "fp8",
            "--fp8-recipe", "te-current")
    prof = tmp_path / "gpu.toml"
    prof.write_text('[gpu."b200"]\ngemm_eta_max = 1.0\nflash_attention_eta = 1.0\n'
                    "attention_eta = 1.0\n")
    base = cli_json(*args)
    fast = cli_json(*args, "--profile", prof)
    assert fast["forward_s"] + fast["backward_s"] < base["forward_s"] + base["backward_s"]
    for d in (base, fast):
        # the ZeRO-3 traffic over 512 ranks dominates the step (the exposed DP time was 42.6 s
        # before the expert-DP group rode its own links, 67 s since: CHANGELOG), far above the
        # card's pipeline: nothing of the card is exposed
        assert d["dp_comm_exposed_s"] > 100 * d["optimizer_s"]
        assert d["optimizer_s"] == pytest.approx(0.1937, abs=1e-4)
        assert d["optimizer_exposed_s"] == 0.0
        # 59 MoE layers (60, the first dense) x 1 micro-batch x (sync 1.3 ms + launches 2.0 ms)
        assert d["fixed_s"] == pytest.approx(59 * (0.0013 + 0.0020), rel=1e-9)
    assert fast["step_time_s"] <= base["step_time_s"] * (1 + 1e-12)
    # the DP tail takes what the compute gives up: compute + exposed DP is the same sum, and
    # so is the step (43.0838 s both at the time of the fix)
    assert (fast["forward_s"] + fast["backward_s"] + fast["dp_comm_exposed_s"]) == pytest.approx(
        base["forward_s"] + base["backward_s"] + base["dp_comm_exposed_s"], rel=1e-6)
    assert fast["step_time_s"] == pytest.approx(base["step_time_s"], rel=1e-6)
