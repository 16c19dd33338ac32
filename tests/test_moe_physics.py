"""MoE physics by hand: the routed experts' own FLOP equations, concurrent expert GEMMs (one
W_half per concurrent group, not per expert), the most-loaded expert-parallel rank
(--moe-imbalance) and Megatron-LM's parallel folding (--etp)."""

import csv
import io

import pytest

from optimus_calc.equations import compiled as eq
from optimus_calc.evaluate.efficiency import expert_efficiency
from optimus_calc.specs.assumptions import Assumptions

H100_ETA, H100_HALF = 0.59, 11.5  # catalog h100-sxm: gemm_eta_max, gemm_half_GFLOP


def curve(w_gflop):
    return H100_ETA * w_gflop / (w_gflop + H100_HALF)


def test_expert_flops_have_their_own_equations():
    # Mixtral-8x7B (h 4096, expert f 14336, SwiGLU m_m = 3, top-2), 4096 tokens per GPU,
    # 32 MoE layers: 4096 x 32 x 2 x 3 x 4096 x 14336 x 2 = (3 x 2^19) x (7 x 2^23) = 21 x 2^42
    # = 92,358,976,733,184 FLOPs forward
    f = eq.compute__moe_expert_forward_flops(L_moe=32, f_x=14336, h=4096, k=2, m_m=3,
                                             tau_g=4096)
    assert f == 92_358_976_733_184
    # backward 2x; full recomputation re-runs the forward: 3x
    assert eq.compute__moe_expert_backward_flops(F_xf=f, r_x=0) == 2 * f
    assert eq.compute__moe_expert_backward_flops(F_xf=f, r_x=1) == 3 * f


def test_explain_names_the_expert_equation(run):
    r = run("explain", "compute.moe_expert_forward_flops")
    assert r.code == 0 and "MegaBlocks" in r.out


def test_concurrent_expert_gemms_share_one_fixed_cost(cat):
    # GPT-OSS-120B: h 2880, expert f 2880, 128 experts, top-4; EP 8, TP 1, 4096 tokens per
    # micro-batch: 4096 x 4 x 8 / 128 = 1,024 tokens per expert; one expert GEMM
    # 2 x 1024 x 2880 x 2880 = 16,986,931,200 FLOPs. Transformer Engine runs the 16 local
    # experts' GEMMs 4 at a time (4 compute streams): W_half once per 4 GEMMs, the curve read
    # at 4 x 16.987 = 67.948 GFLOP: 0.59 x 67.948 / (67.948 + 11.5) = 0.50460
    h100 = cat.get("h100-sxm", "gpu")
    assert eq.efficiency__tokens_per_expert(E=128, e_p=8, k=4, t=1, t_x=1, tau_mb=4096) == 1024
    w = eq.efficiency__expert_gemm_flops(M_x=1024, f_x=2880, h=2880, t_x=1)
    assert w == 16_986_931_200
    assert eq.efficiency__expert_launch_flops(W_x=w, n_g=4, iota=1) == 67_947_724_800
    four = float(expert_efficiency(h100, 2880, 1, 4096, 4, 128, 8, 2880))
    assert four == pytest.approx(curve(67.9477248), rel=1e-9)
    assert four == pytest.approx(0.50460, abs=1e-5)
    # one after another (SequentialMLP): 0.59 x 16.987 / (16.987 + 11.5) = 0.35182
    one = float(expert_efficiency(h100, 2880, 1, 4096, 4, 128, 8, 2880, streams=1))
    assert one == pytest.approx(curve(16.9869312), rel=1e-9)
    # one grouped kernel over all 16 (torch._grouped_mm): 271.79 GFLOP, 0.56605
    grouped = float(expert_efficiency(h100, 2880, 1, 4096, 4, 128, 8, 2880, streams=1e6))
    assert grouped == pytest.approx(curve(271.7908992), rel=1e-9)
    # Mixtral at EP 8 has one local expert: concurrency changes nothing
    assert float(expert_efficiency(h100, 4096, 2, 4096, 2, 8, 8, 14336)) == pytest.approx(
        float(expert_efficiency(h100, 4096, 2, 4096, 2, 8, 8, 14336, streams=1)), rel=1e-12)


def test_most_loaded_rank_sets_the_expert_time(cat):
    # iota 1.25: the loaded rank's grouped GEMM is 1.25 x 271.79 = 339.74 GFLOP, and it runs
    # 1.25x the balanced FLOPs: 0.59 x 339.74 / (339.74 + 11.5) / 1.25 = 0.57068 / 1.25 = 0.45655
    h100 = cat.get("h100-sxm", "gpu")
    eta = float(expert_efficiency(h100, 2880, 1, 4096, 4, 128, 8, 2880, streams=1e6,
                                  imbalance=1.25))
    assert eta == pytest.approx(curve(1.25 * 271.7908992) / 1.25, rel=1e-9)
    assert eta == pytest.approx(0.45655, abs=1e-5)
    # a fixed efficiency (--assume gemm_efficiency=0.5) replaces the curve, not the imbalance
    fixed = float(expert_efficiency(h100, 2880, 1, 4096, 4, 128, 8, 2880, imbalance=1.25,
                                    fixed=0.5, streams=1e6))
    assert fixed == pytest.approx(0.4)


def test_imbalance_slows_expert_compute_by_hand(run):
    # Mixtral-8x7B on one DGX H100, TP 2, EP 4, global batch 8 x 4096: DP 4, 4096 tokens per
    # GPU; experts forward 92,358,976,733,184 FLOPs (above) + backward 2x = 277,076,930,199,552.
    # At a fixed efficiency 0.5 on 989 TFLOP/s, iota 1.25 adds 0.25 of their time:
    # 0.25 x 2.77077e14 / (0.5 x 989e12) = 0.140080 s
    base = ("step", "mixtral-8x7b", "--node", "dgx-h100", "--tp", 2, "--ep", 4, "--zero", 1,
            "--seq-len", 4096, "--global-batch", 8, "--assume", "gemm_efficiency=0.5",
            "--format", "json")
    one = run(*base).json()["breakdown"]["compute_s"]
    loaded = run(*base, "--moe-imbalance", 1.25).json()["breakdown"]["compute_s"]
    assert loaded - one == pytest.approx(0.25 * 277_076_930_199_552 / (0.5 * 989e12), rel=1e-6)


def test_imbalance_scales_the_all_to_all_by_hand(run):
    # as tests/test_step.py's cross-node case (TP 8, EP 2 on 2 DGX H100: one NIC per rank,
    # 45 GB/s, alpha 3 us), the loaded rank receives 1.25 x 67,108,864 B per all-to-all:
    # each 3e-6 + 1.25 x 33,554,432 / 45e9; 4 per layer x 32 layers
    assert eq.step__ep_message_bytes(b=1, b_w=2, c=1, h=4096, k=2, s=4096, t=8, t_x=8,
                                     iota=1.25) == 83_886_080
    d = run("step", "mixtral-8x7b", "--node", "dgx-h100", "--nodes", 2, "--tp", 8, "--ep", 2,
            "--zero", 1, "--seq-len", 4096, "--global-batch", 2, "--moe-imbalance", 1.25,
            "--format", "json").json()
    assert d["breakdown"]["ep_comm_s"] == pytest.approx(
        4 * 32 * (3e-6 + 1.25 * 33_554_432 / 45e9), rel=1e-6)


def test_full_recompute_reruns_the_forward_all_to_alls(run):
    # the case above with --recompute full: the recomputed forward dispatches and combines
    # again, 6 all-to-alls per MoE layer instead of 4 (Megatron-LM checkpoints the whole layer)
    argv = ("step", "mixtral-8x7b", "--node", "dgx-h100", "--nodes", 2, "--tp", 8, "--ep", 2,
            "--zero", 1, "--seq-len", 4096, "--global-batch", 2, "--moe-imbalance", 1.25,
            "--format", "json")
    d = run(*argv, "--recompute", "full").json()
    assert d["breakdown"]["ep_comm_s"] == pytest.approx(
        6 * 32 * (3e-6 + 1.25 * 33_554_432 / 45e9), rel=1e-6)
    sel = run(*argv, "--recompute", "selective").json()   # the attention core only
    assert sel["breakdown"]["ep_comm_s"] == pytest.approx(
        4 * 32 * (3e-6 + 1.25 * 33_554_432 / 45e9), rel=1e-6)


def test_imbalance_is_a_named_assumption_said_in_the_notes(run):
    assert Assumptions().moe_imbalance == 1.0 and Assumptions().moe_expert_gemm_streams == 4
    r = run("step", "mixtral-8x7b", "--node", "dgx-h100", "--ep", 8, "--zero", 1,
            "--seq-len", 4096, "--global-batch", 8)
    assert r.code == 0 and "balanced routing (--moe-imbalance 1.0, the default)" in r.out
    assert run("step", "llama-3-8b", "--node", "dgx-h100", "--zero", 1,
               "--global-batch", 8).out.count("--moe-imbalance") == 0
    bad = run("step", "mixtral-8x7b", "--ep", 8, "--moe-imbalance", 0.5)
    assert bad.code == 2 and "--moe-imbalance" in bad.err and "Traceback" not in bad.err
    bad = run("step", "mixtral-8x7b", "--ep", 8, "--assume", "moe_imbalance=0.9")
    assert bad.code == 2 and "moe_imbalance" in bad.err


def test_imbalance_is_capped_by_what_routing_can_put_on_one_rank(run):
    """efficiency.moe_imbalance_cap: a token sends at most min(k, E / EP) of its k rows to one
    rank, so the most-loaded of EP ranks gets at most EP min(k, E / EP) / k times its share."""
    from optimus_calc.equations.recording import eq
    cap = lambda E, k, e: float(eq.efficiency__moe_imbalance_cap(E=E, e_p=e, iota_u=1e9, k=k))
    assert cap(8, 2, 8) == 4.0        # Mixtral at EP 8: 8 x min(2, 1) / 2
    assert cap(8, 2, 2) == 2.0        # EP 2: 2 x min(2, 4) / 2, every row of a token on one rank
    assert cap(128, 8, 16) == 16.0    # Qwen3-30B-A3B at EP 16: 16 x min(8, 8) / 8
    assert cap(256, 8, 64) == 32.0    # DeepSeek-V3 at EP 64: 64 x min(8, 4) / 8
    assert cap(8, 2, 1) == 1.0        # one rank holds every expert
    assert float(eq.efficiency__moe_imbalance_cap(E=8, e_p=8, iota_u=1.5, k=2)) == 1.5
    # above the cap, every command runs at the cap and says so (as plan caps it per layout,
    # so the layout plan recommends runs in step with the same flags)
    base = ("mixtral-8x7b", "--ep", 8, "--zero", 3)
    at_cap = run("step", *base, "--moe-imbalance", 4, "--format", "json").json()
    over = run("step", *base, "--moe-imbalance", 4.5, "--format", "json").json()
    assert over["step_time_s"] == at_cap["step_time_s"]
    # the JSON says what ran beside what was typed (Mixtral at EP 8: cap 4)
    assert (over["assumptions"]["moe_imbalance"], over["moe_imbalance_applied"]) == (4.5, 4.0)
    assert "moe_imbalance_applied" not in run("step", "llama-3-8b", "--format", "json").json()
    text = " ".join(run("step", *base, "--moe-imbalance", 4.5).out.split())
    assert "--moe-imbalance 4.5 capped at 4 at EP 8: the most-loaded rank can get no more" in text
    one = run("memory", "mixtral-8x7b", "--moe-imbalance", 1.5, "--format", "json").json()
    none = run("memory", "mixtral-8x7b", "--format", "json").json()  # EP 1: cap 1
    assert one["per_gpu"] == none["per_gpu"] and one["moe_imbalance_applied"] == 1.0
    text = " ".join(run("memory", "mixtral-8x7b", "--moe-imbalance", 1.5).out.split())
    assert "--moe-imbalance 1.5 capped at 1 at EP 1" in text


def test_imbalance_is_capped_at_the_layout_each_command_evaluates(run):
    # breakeven without a layout plans one (EP 1 here, cap 1) and caps the imbalance there; a
    # typed layout is capped the same way (Mixtral at EP 8: 4), compare says so; plan says
    # where it capped, and its recommendation runs in step with the same flags (a cold review
    # found step refusing `plan mixtral-8x7b --moe-imbalance 2`'s layout)
    assert run("breakeven", "mixtral-8x7b", "--nodes", 4, "--moe-imbalance", 2).code == 0
    for cmd in (("breakeven",), ("compare",), ("nics",), ("fit", "--solve", "micro-batch")):
        r = run(*cmd, "mixtral-8x7b", "--tp", 1, "--ep", 8, "--moe-imbalance", 8)
        assert r.code == 0 and "--moe-imbalance 8 capped at 4 at EP 8" in " ".join(
            r.out.split()), cmd
    out = " ".join(run("plan", "mixtral-8x7b", "--nodes", 2, "--moe-imbalance", 3).out.split())
    assert "--moe-imbalance 3 capped at 1 at the recommended layout's EP 1" in out
    rec = run("plan", "mixtral-8x7b", "--moe-imbalance", 2, "--format", "json").json()
    lay = rec["recommended"]
    assert lay["ep"] == 1 and lay["moe_imbalance_applied"] == 1.0
    # each candidate at its own EP (Mixtral: EP min(2, 8 / EP) x EP / 2 = 1, 2, 4 at 1, 2, 8)
    assert all(c["moe_imbalance_applied"] == min(2.0, {1: 1.0, 2: 2.0, 4: 4.0, 8: 4.0}[c["ep"]])
               for c in rec["candidates"])
    flags = ["--tp", lay["tp"], "--pp", lay["pp"], "--ep", lay["ep"], "--zero", lay["zero"],
             "--micro-batch", lay["micro_batch"], "--recompute", lay["recompute"],
             "--offload", lay["offload"], "--framework", lay["framework"].split(",")[0]]
    flags += ["--offload-params"] if lay["offload_params"] else []
    step = run("step", "mixtral-8x7b", "--moe-imbalance", 2, *flags, "--format", "json")
    assert step.code == 0, step.err
    assert step.json()["step_time_s"] == pytest.approx(lay["step_time_s"], rel=1e-9)


def test_every_csv_carries_the_typed_and_applied_imbalance(run):
    # the JSON had them and the CSV neither: Mixtral at EP 8 is capped at 4 (8 experts, top-2:
    # 8 / 2), so 1.3 applies as typed; at EP 1 one rank holds every expert, capped at 1
    def rows(*args):
        r = run(*args, "--moe-imbalance", 1.3, "--format", "csv")
        assert r.code == 0, (args, r.err)
        return list(csv.DictReader(io.StringIO(r.out)))
    ep8 = ("mixtral-8x7b", "--nodes", 2, "--tp", 2, "--ep", 8)
    for cmd in ("step", "memory", "compare", "nics"):
        got = rows(cmd, *ep8)
        assert got and all(float(r["moe_imbalance"]) == 1.3 and
                           float(r["moe_imbalance_applied"]) == 1.3 for r in got), cmd
    cap = {"1": 1.0, "2": 1.3, "4": 1.3, "8": 1.3}  # caps 1, 2, 4, 4 (the test above)
    for r in rows("plan", "mixtral-8x7b", "--nodes", 2, "--top", 5):
        assert float(r["moe_imbalance_applied"]) == cap[r["ep"]], r["ep"]
    mixed = rows("sweep", "--models", "mixtral-8x7b,llama-2-7b", "--nodes", 1)
    assert [(r["moe_imbalance"], r["moe_imbalance_applied"]) for r in mixed
            if r["model"] == "llama-2-7b"] == [("", "")]  # a dense row: empty cells
    assert [float(r["moe_imbalance"]) for r in mixed if r["model"] == "mixtral-8x7b"] == [1.3]
    # an MoE row where nothing fits: the typed value, no applied one, the same columns
    none = rows("sweep", "--models", "deepseek-v3", "--nodes", 1)
    assert [(r["fits"], float(r["moe_imbalance"]), r["moe_imbalance_applied"])
            for r in none] == [("FALSE", 1.3, "")]
    # typed above the cap: 100 at EP 8, capped at 4 (8 experts, top-2), in every command's CSV
    for cmd in ("step", "memory", "compare", "nics", "fit"):
        extra = ("--solve", "micro-batch") if cmd == "fit" else ()
        r = run(cmd, *ep8, *extra, "--moe-imbalance", 100, "--format", "csv")
        got = list(csv.DictReader(io.StringIO(r.out)))
        assert r.code == 0 and got and all(
            (float(x["moe_imbalance"]), float(x["moe_imbalance_applied"])) == (100.0, 4.0)
            for x in got), cmd
    dense = run("step", "llama-2-7b", "--format", "csv").out.splitlines()[0]
    assert "moe_imbalance" not in dense  # a dense model's CSV has no such columns


def test_explain_json_and_all_carry_the_applied_imbalance(run):
    # Mixtral at the default layout (EP 1): 8 typed, capped at 1 (one rank holds all 8 experts)
    one = run("explain", "memory.activation_layer_bytes", "mixtral-8x7b", "--moe-imbalance", 8,
              "--format", "json").json()
    assert (one["moe_imbalance"], one["moe_imbalance_applied"]) == (8.0, 1.0)
    every = run("explain", "--all", "mixtral-8x7b", "--moe-imbalance", 8, "--format", "json")
    assert (every.json()["moe_imbalance"], every.json()["moe_imbalance_applied"]) == (8.0, 1.0)
    table = " ".join(run("explain", "--all", "mixtral-8x7b", "--moe-imbalance", 8).out.split())
    assert "--moe-imbalance 8 capped at 1 at EP 1" in table
    assert "moe_imbalance" not in run("explain", "--all", "llama-2-7b", "--format",
                                      "json").json()  # a dense model: no such keys


def test_imbalance_grows_the_routed_activations_by_hand(run):
    # Mixtral-8x7B (h 4096, gated experts f_x 14336, k 2, 32 MoE layers), seq 4096, micro-batch
    # 1, TP 1, no recompute: the routed term of m_c is 6 k f_x / h = 42 s b h bytes a layer, so
    # each unit of imbalance adds 42 x 4096 x 4096 x 32 = 22,548,578,304 bytes on the most-loaded
    # rank; the memory of imbalance 2 is that of 1 plus it
    args = ("memory", "mixtral-8x7b", "--ep", 8, "--zero", 3, "--seq-len", 4096,
            "--micro-batch", 1, "--format", "json")
    one, two = (run(*args, "--moe-imbalance", x).json()["per_gpu"] for x in (1, 2))
    assert two["activations_bytes"] - one["activations_bytes"] == pytest.approx(
        42 * 4096 * 4096 * 32, rel=1e-9)
    assert two["weights_bytes"] == one["weights_bytes"]


# ---- Megatron-LM's MoE parallel folding (--etp) -----------------------------------------------

def test_folding_layout_rule():
    from optimus_calc.specs.training import Layout
    # NeMo-style TP 2 x DP 16 with EP 32: 32 does not divide dp x cp = 16 without folding;
    # with expert TP 1, EP x ETP = 32 divides tp x cp x dp = 32
    assert Layout(tp=2, dp=16, ep=32, etp=1).expert_tp == 1
    assert Layout(tp=2, dp=16, ep=8).expert_tp == 2  # default: TP (Megatron's)
    with pytest.raises(ValueError, match="--etp"):
        Layout(tp=2, dp=16, ep=32)
    with pytest.raises(ValueError, match="must divide tp x cp x dp = 32"):
        Layout(tp=2, dp=16, ep=32, etp=2)  # 64 ranks of experts on 32 GPUs


def test_folded_expert_memory_by_hand():
    # A = 1000 dense (TP-sharded), X = 6400 expert, R = 10 replicated parameters; TP 2, EP 32,
    # ETP 1: 1000 / 2 + 6400 / 32 + 10 = 710 per GPU, 200 of them experts
    assert eq.memory__params_per_gpu(A=1000, X=6400, R=10, e=32, t=2, t_x=1) == 710
    # DP 16: dense states over 16 ranks, experts over dp x cp x t / (e t_x) = 1 rank:
    # 510 / 16 + 200 / 1 = 231.875 per GPU = P / N_d, N_d = 710 / 231.875 = 3.06199
    n = eq.memory__zero_shard_degree(D_p=16, P=710, P_x=200, c=1, e=32, t=2, t_x=1)
    assert 710 / n == pytest.approx(231.875, rel=1e-12)
    # ETP = TP gives back the unfolded form (e - 1) P_x: 16 x 710 / (710 + 31 x 200)
    assert eq.memory__zero_shard_degree(D_p=16, P=710, P_x=200, c=1, e=32, t=2,
                                        t_x=2) == pytest.approx(16 * 710 / (710 + 31 * 200))


def test_folded_all_to_all_by_hand(run):
    # Mixtral on one DGX H100, TP 2 x DP 4, EP 8 with ETP 1: the EP group is the 8 GPUs of the
    # node (ranks ETP = 1 apart) and each sends its sequence-parallel half of the tokens:
    # z = 4096 x 1 x 4096 x 2 B x top-2 x 1/2 = 33,554,432 B; pairwise all-to-all inside the
    # node: 7 x 1 us + 7/8 x z / 369 GB/s (NVLink 4 at its efficiency); 4 per layer x 32 layers
    d = run("step", "mixtral-8x7b", "--node", "dgx-h100", "--tp", 2, "--ep", 8, "--etp", 1,
            "--zero", 1, "--seq-len", 4096, "--global-batch", 4, "--format", "json").json()
    assert d["layout"]["etp"] == 1 and d["layout"]["dp"] == 4
    assert d["breakdown"]["ep_comm_s"] == pytest.approx(
        4 * 32 * (7e-6 + 7 / 8 * 33_554_432 / 369e9), rel=1e-9)
    # without --etp the same EP 8 does not divide dp x cp = 4: refused, naming the flag
    bad = run("step", "mixtral-8x7b", "--node", "dgx-h100", "--tp", 2, "--ep", 8)
    assert bad.code == 2 and "--etp" in bad.err and "Traceback" not in bad.err


def test_folding_is_megatron_and_torchtitan_only(cat):
    from optimus_calc.frameworks.registry import layout_support
    from optimus_calc.specs.training import Layout, Training
    model = cat.get("qwen3-30b-a3b", "model")
    tr = Training(seq_len=4096, global_batch=8)

    def runs(**kw):
        return {str(getattr(k, "value", k)): int(v) == 0 for k, v in layout_support(
            Layout(tp=4, dp=2, ep=2, zero=3, **kw), tr, model).items()}
    plain, one, two = runs(), runs(etp=1), runs(etp=2)
    assert plain["megatron"] and one["megatron"] and two["megatron"]
    # torchtitan v0.2.2: ETP is TP or 1 (parallel_dims.py L58-59)
    assert plain["torchtitan"] and one["torchtitan"] and not two["torchtitan"]
    # DeepSpeed's expert TP is its TP (deepspeed/utils/groups.py L559-560): TP 2 x DP 4, EP 2,
    # ZeRO-1 runs there unfolded (AutoTP: no sequence parallelism), not with ETP 1
    no_sp = Training(seq_len=4096, global_batch=8, sequence_parallel=False)
    ds = [{str(getattr(k, "value", k)): int(v) == 0 for k, v in layout_support(
        Layout(tp=2, dp=4, ep=2, zero=1, **kw), no_sp, model).items()}["deepspeed"]
          for kw in ({}, {"etp": 1})]
    assert ds == [True, False]
    assert not one["megatron-deepspeed"] and not one["deepspeed"]


def test_sweep_and_the_json_without_an_assumptions_block_say_what_was_capped(run):
    # Mixtral-8x7B's sweep row on one DGX A100 runs EP 1: cap 1 (a cold review: a sweep never
    # said so); compare and nics JSON have no assumptions block, so they carry the typed value
    out = " ".join(run("sweep", "--models", "mixtral-8x7b", "--nodes", 1,
                       "--moe-imbalance", 6).out.split())
    assert "--moe-imbalance 6 capped at 1 at mixtral-8x7b on 1 x dgx-a100's EP 1" in out
    (row,) = run("sweep", "--models", "mixtral-8x7b", "--nodes", 1, "--moe-imbalance", 6,
                 "--format", "json").json()["rows"]
    assert row["ep"] == 1 and row["moe_imbalance_applied"] == 1.0
    for cmd in ("compare", "nics"):
        d = run(cmd, "mixtral-8x7b", "--tp", 1, "--ep", 8, "--moe-imbalance", 6,
                "--format", "json").json()
        assert (d["moe_imbalance"], d["moe_imbalance_applied"]) == (6.0, 4.0), cmd
