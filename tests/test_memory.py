"""The memory command against published numbers and hand-computed offload cases."""

import pytest

OPTIMUS = ["70e9", "--nodes", 2, "--tp", 2, "--pp", 4, "--dp", 2, "--model-states-only"]


def mem(run, *args):
    r = run("memory", *args, "--format", "json")
    assert r.code == 0, r.err
    return r.json()


def test_optimusnic_no_zero(run):
    # calibration.md section 2: 70e9 x 16 bytes = 1120 GB; 70e9/8 = 8.75B params/GPU -> 140 GB
    d = mem(run, *OPTIMUS)
    assert d["model_states_total_bytes"] == pytest.approx(1120e9)
    assert d["per_gpu"]["total_bytes"] == pytest.approx(140e9)
    assert d["fits"] is False
    assert "exceeds the 76.00 GB usable of a100-80gb (80.00 GB less 5% headroom" in d["reasons"][0]


def test_optimusnic_zero3(run):
    # ZeRO-3 over DP=2: 140/2 = 70 GB
    d = mem(run, *OPTIMUS, "--zero", 3)
    assert d["per_gpu"]["total_bytes"] == pytest.approx(70e9)


def test_optimusnic_smartnic(run):
    # 4D/N_p on the GPU = 4 x 70e9/16 = 17.5 GB; 12D/N_p = 52.5 GB to each GPU's SmartNIC
    d = mem(run, *OPTIMUS, "--zero", 3, "--offload", "smartnic")
    assert d["per_gpu"]["total_bytes"] == pytest.approx(17.5e9)
    off = d["offload"]
    assert off["bytes_per_device"] == pytest.approx(52.5e9)
    assert off["devices"] == 16
    # BlueField-3 has 32 GB: 20.5 GB spills; ceil(52.5/32) = 2 cards per GPU would hold it
    assert off["capacity_bytes_per_device"] == pytest.approx(32e9)
    assert off["fits_on_device"] is False
    assert off["spill_to_host_bytes_per_device"] == pytest.approx(20.5e9)
    assert off["devices_per_gpu_for_capacity"] == 2
    assert d["fits"] is True  # the spill fits in host RAM
    assert any("20.50 GB per card spills to host" in n for n in d["notes"])


def test_smartnic_no_spill_is_infeasible_with_reason(run):
    d = mem(run, *OPTIMUS, "--zero", 3, "--offload", "smartnic", "--no-spill")
    assert d["fits"] is False
    assert d["reasons"] == ["optimizer shard 52.50 GB per card exceeds bluefield-3 memory "
                            "32.00 GB and spill to host is disabled (--no-spill); 2 cards per "
                            "GPU (16 per node, --smartnics-per-node) would hold it"]


def test_smartnic_two_per_gpu_and_v80(run):
    # 16 BlueField-3 per node share 8 GPUs' state: 52.5 x 8/16 = 26.25 GB per card, fits in 32
    d = mem(run, *OPTIMUS, "--zero", 3, "--offload", "smartnic", "--smartnics-per-node", 16)
    assert d["offload"]["bytes_per_device"] == pytest.approx(26.25e9)
    assert d["offload"]["fits_on_device"] is True
    # Alveo V80: 32 GB HBM + 32 GB DDR4 = 64 GB holds 52.5 GB
    d = mem(run, *OPTIMUS, "--zero", 3, "--offload", "smartnic", "--smartnic", "alveo-v80")
    assert d["offload"]["fits_on_device"] is True
    assert d["offload"]["capacity_bytes_per_device"] == pytest.approx(64e9)


def test_cpu_offload_by_hand(run):
    # ZeRO-2 + ZeRO-Offload, P = 8.75e9/GPU, DP 2. GPU keeps 2P weights = 17.5 GB.
    # Host per GPU: 12P/2 = 52.5 GB optimizer + 4P/2 = 17.5 GB fp32 gradients = 70 GB;
    # x 8 GPUs = 560 GB per node, under 2048 GB x 0.9 usable.
    d = mem(run, *OPTIMUS, "--zero", 2, "--offload", "cpu")
    assert d["per_gpu"]["total_bytes"] == pytest.approx(17.5e9)
    assert d["offload"]["bytes_per_gpu"] == pytest.approx(70e9)
    assert d["offload"]["bytes_per_device"] == pytest.approx(560e9)
    assert d["offload"]["capacity_bytes_per_device"] == pytest.approx(2048e9 * 0.9)
    assert d["fits"] is True


def test_cpu_offload_infeasible_on_xe8545(run):
    # One XE8545 (4 x A100-40GB, 1 TB): 70e9 with TP 4, ZeRO-1 over DP 1: per GPU
    # 12 x 17.5e9 + 4 x 17.5e9 = 280 GB on the host; x 4 = 1120 GB > 921.6 GB usable
    d = mem(run, "70e9", "--node", "xe8545", "--tp", 4, "--zero", 1, "--offload", "cpu",
            "--model-states-only")
    assert d["fits"] is False
    assert ("offloaded state 1120.00 GB per node exceeds host RAM 921.60 GB usable on xe8545"
            in d["reasons"])


def test_nvme_offload_by_hand(run):
    # ZeRO-3 + ZeRO-Infinity NVMe: optimizer 52.5 GB per GPU, 8 GPUs over 8 drives = 52.5 GB
    # per D7-P5600 (3200 GB). GPU keeps 2P/2 = 8.75 GB of weights (fp32 grads go to the host).
    # Host: 8 x (4P/2 = 17.5 GB gradients + 4 buffers x 1e8 x 4 B = 1.6 GB) = 152.8 GB
    d = mem(run, *OPTIMUS, "--zero", 3, "--offload", "nvme")
    assert d["per_gpu"]["total_bytes"] == pytest.approx(8.75e9)
    assert d["offload"]["bytes_per_device"] == pytest.approx(52.5e9)
    assert d["offload"]["devices"] == 16
    assert d["offload"]["host_bytes_per_node"] == pytest.approx(152.8e9)
    assert d["fits"] is True


def test_nvme_infeasible_without_drives(run):
    # refused (round 30), as SuperOffload without a Grace: it priced the step on no drives
    r = run("memory", "14e9", "--node", "gh200", "--offload", "nvme", "--model-states-only")
    assert r.code == 2 and "--offload nvme: gh200 has no NVMe drives for ZeRO-Infinity" in r.err


def test_superchip_by_hand(run):
    # One GH200 (96 GB HBM, 480 GB LPDDR5X), 14e9 params, ZeRO-3 (SuperOffload's base) on one
    # GPU, 10% kept on the GPU:
    # GPU: weights 28 GB + optimizer 0.1 x 168 = 16.8 GB = 44.8 GB (fp32 grads go to Grace).
    # Grace: 0.9 x 168 = 151.2 GB optimizer + 4 x 14e9 = 56 GB gradients = 207.2 GB <= 432
    d = mem(run, "14e9", "--node", "gh200", "--offload", "superchip", "--gpu-fraction", 0.1,
            "--zero", 3, "--model-states-only")
    assert d["per_gpu"]["total_bytes"] == pytest.approx(44.8e9)
    assert d["offload"]["bytes_per_device"] == pytest.approx(207.2e9)
    assert d["offload"]["capacity_bytes_per_device"] == pytest.approx(432e9)
    assert d["fits"] is True


def test_superchip_infeasible(run):
    r = run("memory", *OPTIMUS, "--offload", "superchip")  # no Grace: refused (hardening_3)
    assert r.code == 2 and "dgx-a100 is not a superchip node" in r.err
    # and too large for one GH200's Grace: 40e9 x (12 + 4) = 640 GB > 432 GB with all state on
    # Grace; with the default 10% of the optimizer kept on the GPU (offload ratio 0.90):
    # 40e9 x (0.9 x 12 + 4) = 592 GB
    d = mem(run, "40e9", "--node", "gh200", "--offload", "superchip", "--model-states-only",
            "--gpu-fraction", 0)
    assert "offloaded state 640.00 GB per Grace exceeds its memory 432.00 GB usable" in d["reasons"]
    d = mem(run, "40e9", "--node", "gh200", "--offload", "superchip", "--model-states-only")
    assert "offloaded state 592.00 GB per Grace exceeds its memory 432.00 GB usable" in d["reasons"]


def test_grad_bytes_four_gives_18_bytes(run):
    d = mem(run, *OPTIMUS, "--grad-bytes", 4)
    assert d["model_states_total_bytes"] == pytest.approx(70e9 * 18)


def test_pipeline_first_stage_most_loaded(run):
    # Llama-3-70B, PP 4: stage 0 holds 4 micro-batches in flight (1F1B)
    d = mem(run, "llama70b", "--nodes", 2, "--tp", 2, "--pp", 4, "--seq-len", 4096,
            "--zero", 3, "--global-batch", 64)
    assert d["per_gpu"]["stage"] == 0
    assert [s["micro_batches_in_flight"] for s in d["stages"]] == [4, 3, 2, 1]
    assert [s["layers"] for s in d["stages"]] == [20, 20, 20, 20]


def test_uneven_pipeline_split_reported(run):
    # 80 layers over 3 stages: 26, 27, 27 (extra layers on the last stages)
    d = mem(run, "llama-2-70b", "--nodes", 3, "--tp", 8, "--pp", 3, "--zero", 1,
            "--seq-len", 4096, "--global-batch", 3, "--node", "dgx-a100")
    assert [s["layers"] for s in d["stages"]] == [26, 27, 27]


def test_gqa_swiglu_coefficients(cat):
    from optimus_calc.evaluate.shapes import activation_coefficients
    # Llama-3-70B: (4*8192 + 4*1024)/8192 = 4.5; SwiGLU 6*28672/8192 = 21
    assert activation_coefficients(cat.get("llama-3-70b", "model")) == (4.5, 21.0)
    # GPT-3: MHA 8, GELU 4*49152/12288 = 16 (Korthikanti's 24 = 8 + 16)
    assert activation_coefficients(cat.get("gpt3-175b", "model")) == (8.0, 16.0)
    # Mixtral: MLP 6*14336/4096 = 21 x top-2 + router 4*8/4096
    q, m = activation_coefficients(cat.get("mixtral-8x7b", "model"))
    assert m == pytest.approx(42 + 32 / 4096)


@pytest.mark.parametrize("args,msg", [
    (["--tp", 3], "--tp 3 x --pp 1 x --cp 1 = 3 does not divide the 8 GPUs"),
    (["--tp", 2, "--pp", 2, "--dp", 3], "is not the 8 GPUs"),
    (["--tp", 8, "--pp", 1, "--dp", 1, "--gpus-per-node", 8], None),
])
def test_layout_must_multiply_out(run, args, msg):
    r = run("memory", "llama70b", *args)
    if msg is None:
        assert r.code == 0
    else:
        assert r.code == 2 and msg in r.err


def test_tp_must_divide_heads(run):
    r = run("memory", "gpt2-xl", "--tp", 2, "--gpus-per-node", 2)
    assert r.code == 2 and "--tp 2 does not divide the 25 attention heads of gpt2-xl" in r.err


def test_pp_larger_than_layers(run):
    r = run("memory", "bert-large", "--nodes", 4, "--pp", 32)
    assert r.code == 2 and "--pp 32 is larger than the 24 layers" in r.err


def test_bare_count_needs_model_states_only(run):
    r = run("memory", "70e9")
    assert r.code == 2 and "--model-states-only" in r.err


def test_hf_config_as_model(run):
    from pathlib import Path
    cfg = Path(__file__).parent / "data" / "hf" / "llama" / "config.json"
    d = mem(run, cfg, "--tp", 8, "--model-states-only")
    assert d["model"]["total_params"] == 70_553_706_496


def test_fit_zero1_64_v100(run):
    # 4 Psi + 12 Psi/64 = 32 GB less the 5% headroom = 30.4 GB -> Psi = 30.4e9 / 4.1875 = 7.26e9
    r = run("fit", "1e9", "--solve", "layers", "--node", "dgx-2", "--nodes", 4, "--zero", 1,
            "--model-states-only", "--precision", "fp16", "--format", "json")
    d = r.json()
    assert d["max_params"] == pytest.approx(0.95 * 32e9 / 4.1875, rel=1e-9)
    assert d["max_params"] / 1e9 == pytest.approx(7.26, abs=0.005)


def test_fit_closed_form_by_hand(run):
    # the printed equation: 67 Psi / 16 bytes (4.1875 = 67 / 16) against 30.4 GB
    base = ("fit", "1e9", "--solve", "layers", "--node", "dgx-2", "--nodes", 4,
            "--model-states-only", "--precision", "fp16", "--format", "json")
    d = run(*base, "--zero", 1).json()
    assert d["equation"] == "67*Psi/16 = 3.04e+10 bytes"
    # what binds, at the answer: the 2-byte weights of 7.26e9 parameters, 14.5 GB, of 30.4 GB
    assert d["binding"].startswith("weights (14.5 GB) is the largest part of the 30.4 GB")
    # ZeRO-3 with CPU offload: on the GPU the fp16 weights sharded over 64 ranks, 2 / 64 = 1 /
    # 32 byte a parameter (the GPU alone would hold 32 x 30.4e9 = 9.73e11); the host of each
    # 16-GPU node holds 16 ranks' fp32 state and gradients, 16 x (12 + 4) / 64 = 4 bytes a
    # parameter, in its 1,536 GB less the 10% host_reserved_fraction: 0.9 x 1536e9 / 4 =
    # 3.456e11 binds first (it answered 9.73e11, which `memory` said does not fit)
    d = run(*base, "--zero", 3, "--offload", "cpu").json()
    assert d["equation"] == "Psi/32 = 3.04e+10 bytes"
    assert d["max_params"] == pytest.approx(0.9 * 1536e9 / 4, rel=1e-11)  # a whole count
    assert "the offload side binds first" in d["detail"]
    fits = ("memory", f"{d['max_params']:.6e}", *base[4:-2], "--zero", 3, "--offload", "cpu",
            "--format", "json")
    assert run(*fits).json()["fits"]
    over = list(fits)
    over[1] = f"{d['max_params'] * 1.0001:.6e}"
    assert not run(*over).json()["fits"]
    # every state off the GPU: nothing there grows with Psi (sympy.solve said "W_res =
    # 3.04e+10 bytes", "no solution" and that no change made it fit); the host binds: with
    # NVMe offload each node's RAM holds its 16 ranks' fp32 gradients, 16 x 4 / 64 = 1 byte a
    # parameter, and 4 pinned swap buffers of 1e8 fp32 elements a rank, 16 x 1.6 GB = 25.6 GB
    # (memory.nvme_host_bytes): (1382.4 - 25.6) GB / 1 byte = 1.3568e12
    d = run(*base, "--zero", 3, "--offload", "nvme", "--offload-params").json()
    assert d["equation"] == "0 = 3.04e+10 bytes"
    assert d["max_params"] == pytest.approx(1.3568e12, rel=1e-11)
    assert "nothing on the GPU grows with it" in d["detail"]


def test_fit_count_is_the_largest_whole_one_memory_fits(run):
    # a third cold review: (1) a GPU bound above BareModel's 1e16 crashed (exit 1, a
    # ValidationError): 13,888 GB200 racks hold 1.1e16 parameters at ZeRO-3, so the count's
    # own bound answers; (2) float rounding put floor(usable / a) one count above what `memory`
    # fits, and the answer fell to a bisection that blamed an offload side the layout does not
    # have; (3) the bisection stopped 10-140 counts short (1.152e11 exactly, now)
    big = run("fit", "7e9", "--solve", "layers", "--model-states-only", "--node",
              "gb200-nvl72", "--nodes", 13888, "--zero", 3, "--format", "json")
    assert big.code == 0 and big.json()["max_params"] == 1e16
    base = ("--solve", "layers", "--model-states-only", "--gpus-per-node", 9, "--nodes", 13,
            "--zero", 3)
    d = run("fit", "7e9", *base, "--format", "json").json()
    assert d["method"] == "closed form (linear in Psi)" and "offload" not in d["detail"]
    n = int(d["max_params"])
    assert abs(n - 7.6e10 * 117 / 16) <= 1  # 117 ranks x 76 GB usable / 16 B (2 B sharded)
    fits = [run("memory", str(x), *base[2:], "--format", "json").json()["fits"]
            for x in (n, n + 1)]
    assert fits == [True, False]
    d = run("fit", "1e9", "--solve", "layers", "--model-states-only", "--zero", 3, "--offload",
            "cpu", "--format", "json").json()
    assert d["max_params"] == 0.9 * 2048e9 / 16  # tests/test_terms_offload.py: 1.152e11
    # what binds is said at the answer, on the side that binds
    assert d["binding"].startswith("host RAM: 1843.2 GB of the 1843.2 GB usable per node")


def test_fit_layers_is_the_boundary(run):
    base = ["--nodes", 2, "--tp", 8, "--pp", 2, "--zero", 1, "--recompute", "full",
            "--seq-len", 4096]
    d = run("fit", "llama-2-70b", "--solve", "layers", *base, "--format", "json").json()
    n = d["max_layers"]
    assert n and n >= 80 and d["max_params"] >= 68.97e9  # 80 layers = Llama-2-70B itself
    # the model with n layers fits and with n+1 does not
    from optimus_calc import catalog
    from optimus_calc.evaluate.context import fill_layout, resolve_hardware
    from optimus_calc.evaluate.memory import estimate_memory
    from optimus_calc.specs.assumptions import Assumptions
    from optimus_calc.specs.training import Recompute, Training, ZeroStage
    cat = catalog.load(())
    m = cat.get("llama-2-70b", "model")
    hw = resolve_hardware(cat, "dgx-a100", 2)
    lay = fill_layout(hw, 8, 2, None, 1, zero=ZeroStage(1))
    tr = Training(seq_len=4096, global_batch=512, recompute=Recompute.FULL)
    fits = lambda k: estimate_memory(m.model_copy(update={"layers": k}), hw, lay, tr,  # noqa
                                     Assumptions()).fits
    assert fits(n) and not fits(n + 1)


def test_fit_nodes_and_micro_batch(run):
    d = run("fit", "70e9", "--solve", "nodes", "--tp", 2, "--pp", 4, "--zero", 3,
            "--model-states-only", "--format", "json").json()
    # 16 x 70e9 / (8 x nodes) per GPU <= 80 GB  ->  nodes >= 1.75  ->  2
    assert d["min_nodes"] == 2
    args = ["--nodes", 4, "--tp", 8, "--zero", 3, "--recompute", "full", "--seq-len", 8192,
            "--global-batch", 128]
    d = run("fit", "llama70b", "--solve", "micro-batch", *args, "--format", "json").json()
    b = d["max_micro_batch"]
    # the answer fits and the next divisor of the per-replica batch (128 / DP 4 = 32) does not
    assert mem(run, "llama70b", *args, "--micro-batch", b)["fits"] is True
    nxt = next(k for k in range(b + 1, 33) if 32 % k == 0)
    assert mem(run, "llama70b", *args, "--micro-batch", nxt)["fits"] is False


def test_explain_value_matches_memory(run):
    args = ["llama70b", "--nodes", 2, "--tp", 2, "--pp", 4, "--zero", 3, "--seq-len", 4096,
            "--global-batch", 64]
    total = mem(run, *args)["per_gpu"]["total_bytes"]
    r = run("explain", "memory.gpu_total_bytes", *args, "--format", "json")
    assert r.code == 0 and r.json()["result"] == pytest.approx(total, rel=1e-12)


def test_explain_lists_and_latex(run):
    r = run("explain")
    assert r.code == 0 and "memory.optimizer_bytes" in r.out
    r = run("explain", "optimizer_bytes", "--latex")
    assert r.code == 0 and "\\begin{cases}" in r.out
    r = run("explain", "optimiser_bytes")
    assert r.code == 2 and "did you mean" in r.err


def test_buckets_hold_at_most_the_gradients(run):
    # issue 15: BERT-Large (335M) on 2 x XE8545, TP 4: a stage holds ~84M parameters, 168 MB of
    # bf16 gradients, less than DeepSpeed's 1 GB bucket (5e8 elements x 2 B). The bucket is at
    # most the gradients it holds (memory.bucket_bytes), so ZeRO-1 never needs more GPU memory
    # than ZeRO-0 (whose DDP bucket is 25 MB).
    base = ["bert-large", "--node", "xe8545", "--nodes", 2, "--tp", 4]
    z0 = mem(run, *base, "--zero", 0)["per_gpu"]["total_bytes"]
    z1 = mem(run, *base, "--zero", 1)["per_gpu"]["total_bytes"]
    assert z1 < z0
    from optimus_calc.equations import compiled as eq
    assert float(eq.memory__bucket_bytes(B_cap=1e9, P=84e6, b_g=2)) == 168e6
    assert float(eq.memory__bucket_bytes(B_cap=1e9, P=7e9, b_g=2)) == 1e9


def test_fit_nodes_explains_what_binds_and_suggests_recompute(run):
    # issue 13: with the default batch, TP 2 x PP 4 ZeRO-3 Llama-3-70B needs 171 nodes only
    # because at 171 nodes (DP 171, batch 513) there are 3 micro-batches for 4 stages, so fewer
    # are in flight; full recomputation keeps the layer input only (2 s b h per layer) and fits
    # on 3 nodes. fit says both.
    d = run("fit", "llama70b", "--tp", 2, "--pp", 4, "--zero", 3, "--solve", "nodes",
            "--format", "json").json()
    assert d["min_nodes"] == 171
    assert d["binding_part"] == "activations" and "3 micro-batches for 4 pipeline" in d["binding"]
    rec = [s for s in d["suggestions"] if s["flags"] == "--recompute full"]
    assert rec and rec[0]["value"] == 3
    # and the suggestion holds: with --recompute full, 3 nodes fit and 2 do not
    assert run("fit", "llama70b", "--tp", 2, "--pp", 4, "--zero", 3, "--recompute", "full",
               "--solve", "nodes", "--format", "json").json()["min_nodes"] == 3


def test_fit_nodes_leads_with_the_answer_a_planner_acts_on(run):
    # issue 23: the 171 nodes above fit only because the pipeline is starved (DP 171, batch
    # 513 = 3 x 171: 3 micro-batches for 4 stages, bubble (4 - 1) / 3 = 100%); the answer to act
    # on is --recompute full at 3 nodes (DP 3, batch 513: 171 micro-batches), which leads
    args = ("fit", "llama70b", "--tp", 2, "--pp", 4, "--zero", 3, "--solve", "nodes")
    r = run(*args)
    assert r.code == 0 and r.err == ""
    rows = [line.split(None, 1) for line in r.out.splitlines() if line[:1].isalpha()]
    first = next(v for k, v in rows if k in ("answer", "model"))
    assert first.startswith("3 nodes with --recompute full")  # the first row of the table
    assert "171 nodes, no layout to run: at 171 nodes the batch gives 3 micro-batches for 4 " \
           "pipeline stages" in " ".join(r.out.split())
    assert "bubble is 100%" in r.out
    d = run(*args, "--format", "json").json()
    assert d["answer"] == {"nodes": 3, "flags": "--recompute full",
                           "change": "full activation recomputation"}
    assert d["min_nodes"] == 171 and d["suggestions"][0]["flags"] == "--recompute full"
    assert d["suggestions"][0]["starved"] is False and "3 micro-batches" in d["starved"]
    # a layout that does not starve its pipeline has no lead: 7B, PP 1, fits on one node
    d = run("fit", "llama-2-7b", "--zero", 1, "--solve", "nodes", "--format", "json").json()
    assert d["min_nodes"] == 1 and "answer" not in d
