"""Review of round 12's changes (rev12b): each test pins a defect found by reading them cold."""

import pytest

from optimus_calc.equations import compiled as eq


def test_interleaving_hides_no_less_than_a_typed_pp_overlap():
    # --assume pp_overlap=1 said every steady-state send hides; with --interleave 2 it was
    # ignored (o_pi 0 without a profile): 2 m v = 2 x 8 x 2 = 32 sends of 1 ms exposed. Now the
    # interleaved schedule hides at least o_pp: only the p v - 1 = 7 fill and drain hops,
    # 2 x 7 x 1 ms = 14 ms
    t = eq.step__pp_comm_time(T_p2p=1e-3, m=8, o_pp=1.0, o_pi=0.0, p=4, v=2)
    assert float(t) == pytest.approx(0.014, rel=1e-12)
    # Megatron's profile (o_pi 1) with o_pp 0 unchanged: 14 ms; neither: all 32 sends, 32 ms
    assert float(eq.step__pp_comm_time(T_p2p=1e-3, m=8, o_pp=0.0, o_pi=1.0, p=4, v=2)) == \
        pytest.approx(0.014, rel=1e-12)
    assert float(eq.step__pp_comm_time(T_p2p=1e-3, m=8, o_pp=0.0, o_pi=0.0, p=4, v=2)) == \
        pytest.approx(0.032, rel=1e-12)


def test_step_keeps_a_typed_pp_overlap_when_interleaved(run):
    # the same send (message s x b x h / t, v does not change it) over the same hop: with every
    # steady-state send hidden, 2 (p v - 1) = 14 exposed interleaved against 2 (p - 1) = 6
    args = ("llama2-7b", "--nodes", 2, "--pp", 4, "--tp", 2, "--assume", "pp_overlap=1",
            "--format", "json")
    plain = run("step", *args, "--interleave", 1).json()["pp_comm_s"]
    inter = run("step", *args, "--interleave", 2).json()["pp_comm_s"]
    assert plain > 0
    assert inter / plain == pytest.approx(14 / 6, rel=1e-9)


def test_unfused_attention_runs_the_whole_window_masked_sequence(run, tmp_path):
    """The unfused path computes the whole s x s score matrix and masks the window: gpt-oss's
    windowed layers cost what full ones do (compute.executed_attention_span with kappa_c 0),
    while FlashAttention skips the blocks outside the window; model FLOPs keep the window."""
    import json
    from pathlib import Path
    hf = Path(__file__).parent / "data" / "hf" / "gpt_oss"
    cfg = json.loads((hf / "config.json").read_text())
    cfg["sliding_window"] = 0
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    args = ("--node", "dgx-h100", "--nodes", 1, "--ep", 8, "--zero", 1, "--seq-len", 4096,
            "--global-batch", 8, "--format", "json")
    win = run("step", str(hf), *args, "--no-flash-attn").json()
    full = run("step", str(tmp_path), *args, "--no-flash-attn").json()
    assert win["compute_s"] == pytest.approx(full["compute_s"], rel=1e-12)
    # the span by hand (tests/test_sliding_window.py): 2174.0 of 4096 tokens, 3 passes
    assert full["model_flops"] - win["model_flops"] == pytest.approx(
        3 * 36 * 32768 * 2 * (4096 - 2174.0) * 8192, rel=1e-9)
    fa = run("step", str(hf), *args).json()
    assert fa["compute_s"] < win["compute_s"]
    # executed span by hand: kappa_c 1 keeps 2174.0, kappa_c 0 gives back s
    assert float(eq.compute__executed_attention_span(S_w=2174.0, kappa_c=1.0, s=4096)) == 2174.0
    assert float(eq.compute__executed_attention_span(S_w=2174.0, kappa_c=0.0, s=4096)) == 4096


def test_bf16_optimizer_all_reduce_follows_the_backward(run):
    """DeepSpeed's BF16_Optimizer (bf16, --grad-bytes 4, ZeRO-1) all-reduces in
    _backward_epilogue after the whole backward (engine.py L2970-2982 @ edaa722): none of it
    hides (o_dr 0); it showed only the last bucket exposed (0.0201 of 0.2809 s here)."""
    args = ("step.dp_exposed_time", "llama2-7b", "--nodes", 2, "--zero", 1, "--framework",
            "deepspeed", "--grad-bytes", 4, "--format", "json")
    e = run("explain", *args).json()
    v = e["values"]
    assert v["o_dr"] == 0
    # Z = 1: T_gat (1 - o_pg) + T_red (1 - o_dr) + o_pg max(0, T_gat - W_f); o_pg 0: the BF16
    # optimizer all-gathers in step() (update_lp_params, bf16_optimizer.py L344, L454-464)
    assert v["o_pg"] == 0
    assert e["result"] == pytest.approx(v["T_red"] + v["T_gat"], rel=1e-12)
    assert v["T_red"] > 5 * v["T_bkt"]  # many buckets: the old last-bucket figure was far less
    # bf16 gradients (the reduce-scatter) keep the profile's o_dr, untouched here
    e2 = run("explain", *args[:-4], "--grad-bytes", 2, "--format", "json").json()
    assert e2["values"]["o_dr"] == 1


def test_bf16_optimizer_keeps_the_model_dtype_grad_too(run):
    """BF16_Optimizer allocates an fp32 buffer for every gradient (bf16_optimizer.py L175-176
    @ edaa722) and adds each bf16 .grad into it without freeing it (L356-377): 4 + 2 bytes per
    parameter at ZeRO-1. llama-2-7b's 6,738,415,616 parameters: 6 x that = 40,430,493,696
    bytes (it counted the fp32 buffer only, 26.95 GB); bf16 gradients stay 2 bytes each."""
    args = ("llama2-7b", "--nodes", 2, "--zero", 1, "--framework", "deepspeed", "--format",
            "json")
    st = run("memory", *args, "--grad-bytes", 4).json()["stages"][0]
    assert st["params"] == 6_738_415_616
    assert st["gradients_bytes"] == pytest.approx(6 * 6_738_415_616, rel=1e-12)
    st2 = run("memory", *args, "--grad-bytes", 2).json()["stages"][0]
    assert st2["gradients_bytes"] == pytest.approx(2 * 6_738_415_616, rel=1e-12)
    # the equation: a_bf b_w P at ZeRO-1 only (ZeRO-3's fp32 partitions are its own optimizer's)
    g = eq.memory__gradients_bytes(N_d=16, P=1e9, Z=3, a_bf=1.0, b_g=4, b_w=2, k_g=0, o_g=0)
    assert float(g) == pytest.approx(4e9 / 16, rel=1e-12)


def test_phi3_config_window_is_read(tmp_path):
    """Phi-3-mini-4k's config.json has sliding_window 2047 and Phi3Attention passes it to every
    layer; the phi3 mapper dropped it (the test config, Phi-4's, has none: still none)."""
    import json
    from pathlib import Path

    from optimus_calc.hf_import import load_hf_config
    hf = Path(__file__).parent / "data" / "hf" / "phi3"
    m = load_hf_config(hf / "config.json")
    assert (m.sliding_window, m.sliding_window_layers) == (0, 0)
    cfg = json.loads((hf / "config.json").read_text())
    cfg["sliding_window"] = 2047
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    m = load_hf_config(tmp_path / "config.json")
    assert (m.sliding_window, m.sliding_window_layers) == (2047, m.layers)


def test_catalog_mistral_7b_has_its_window(run, cat):
    """mistral-7b is Mistral-7B-v0.1, whose config.json has sliding_window 4096 on every layer
    (Jiang et al. 2023 section 2); the catalog left it out. At its 8,192 tokens a layer's span
    is 2 x 4096 - 4096^2 / 8192 = 6144 of 8192: model FLOPs fall by 3 passes x 32 layers x
    512 x 8192 tokens x 2 x (8192 - 6144) x (4096 + 4096) = 1.3510798882111488e16."""
    m = cat.get("mistral-7b", "model")
    assert (m.sliding_window, m.sliding_window_layers) == (4096, 32)
    from pathlib import Path
    args = ("--nodes", 1, "--seq-len", 8192, "--global-batch", 512, "--format", "json")
    win = run("step", "mistral-7b", *args).json()
    hf = Path(__file__).parent / "data" / "hf" / "mistral"
    assert run("step", str(hf), *args).json()["model_flops"] == win["model_flops"]
    import json
    cfg = json.loads((hf / "config.json").read_text())
    cfg["sliding_window"] = None  # v0.2's null: no window (absent, MistralConfig's 4096 holds)
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "config.json").write_text(json.dumps(cfg))
        full = run("step", d, *args).json()
    # by hand: all 32 layers windowed, W 4096 at s 8192: span (2 W - W^2 / s) = 6144 tokens; the
    # core's 2 s (d_s + d_v) per token and layer (d_s = d_v = 32 x 128), three passes, over
    # 512 x 8192 tokens: 3 x 32 x 4,194,304 x 2 x (8192 - 6144) x 8192 = 1.3510798882111488e16
    assert full["model_flops"] - win["model_flops"] == pytest.approx(
        3 * 32 * 512 * 8192 * 2 * (8192 - 6144) * 8192, rel=1e-9)


def test_compare_csv_names_sequence_parallelism(run):
    """compare's table header says SP on/off and --framework deepspeed turns it off (AutoTP has
    none, DS_AUTOTP_SP); its CSV named the layout and recompute but not SP."""
    import csv
    import io
    base = ("compare", "llama2-7b", "--nodes", 1, "--zero", 1, "--format", "csv")
    ds = list(csv.DictReader(io.StringIO(run(*base, "--framework", "deepspeed").out)))
    neutral = list(csv.DictReader(io.StringIO(run(*base).out)))
    assert ds and {r["sequence_parallel"] for r in ds} == {"FALSE"} and {r["tp"] for r in ds} == {"8"}
    assert {r["sequence_parallel"] for r in neutral} == {"TRUE"}
