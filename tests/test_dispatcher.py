"""--moe-dispatcher deepep | hybridep: a token crosses to each other node once
(comm.dedup_cross_share in comm.all_to_all_time; DeepSeek-V3 arXiv 2412.19437 section 3.2.2, Megatron-LM
megatron/core/transformer/moe/README.md L310-311 @ d98e8a6), the frameworks that run it, and
the flags the exports write."""

import pytest

from optimus_calc.equations import compiled as eq

QWEN = ("step", "qwen3-30b-a3b", "--node", "dgx-h100", "--nodes", "2", "--ep", "16",
        "--micro-batch", "1", "--global-batch", "1024", "--seq-len", "4096", "--framework",
        "megatron", "--zero", "1", "--precision", "fp8", "--fp8-recipe", "te-current",
        "--format", "json")


def _a2a(z, n, m, k=None):
    x = (eq.comm__pairwise_cross_share(m=m, n=n) if k is None
         else eq.comm__dedup_cross_share(k=k, m=m, n=n, N=n / m))
    return eq.comm__all_to_all_time(alpha=0.0, beta_i=0.0, B_g=1.0, m=m, n=n, z=z, x=x)


def test_a_token_crosses_to_each_other_node_once():
    # the network term alone (no latency, free NVLink, B_g = 1 byte/s, z = 1 byte):
    # Qwen3-30B-A3B, top-8 of 128 experts, EP 16 over 2 nodes: NCCL's all-to-all sends
    # (16 - 8) / 16 = 0.5 of the buffer (4 of a token's 8 copies); deduplicated, a token
    # reaches the other node unless all 8 experts are on its own: 1 - (1/2)^8 = 0.99609375
    # copies of the 8 in the buffer: 0.99609375 / 8 = 0.12451171875
    assert _a2a(1.0, 16, 8) == pytest.approx(0.5, rel=1e-12)
    assert _a2a(1.0, 16, 8, k=8) == pytest.approx(0.12451171875, rel=1e-12)
    # DeepSeek-V3, top-8 of 256, EP 64 over 8 nodes: 7 x (1 - (7/8)^8) = 4.59476 other nodes
    # of 8 copies: 0.574342 of the buffer against NCCL's 56/64 = 0.875
    assert _a2a(1.0, 64, 8, k=8) == pytest.approx(7 * (1 - (7 / 8) ** 8) / 8, rel=1e-12)
    assert _a2a(1.0, 64, 8, k=8) == pytest.approx(0.574342, abs=1e-6)
    # inside one node nothing crosses a NIC: the same time as NCCL's
    assert eq.comm__dedup_cross_share(k=8, m=8, n=8, N=1) == 0 == \
        eq.comm__pairwise_cross_share(m=8, n=8)


def test_step_times_the_dispatcher_the_run_names(run):
    nccl = run(*QWEN).json()
    deep = run(*QWEN, "--moe-dispatcher", "deepep").json()
    hyb = run(*QWEN, "--moe-dispatcher", "hybridep").json()
    # One all-to-all moves z = micro-batch 1 x 4096 tokens x hidden 2048 x top-8 x 2 bytes =
    # 134,217,728 bytes; a step runs 48 MoE layers x 64 micro-batches (1024 / DP 16) x 4 of
    # them (dispatch and combine, forward and backward) = 12,288. NCCL: the NIC carries
    # (16 - 8)/16 = 0.5 z at one ConnectX-7's 400 Gb/s x 0.9 = 45 GB/s (1.4913 ms), NVLink
    # 7/16 z at 450 GB/s x 0.82 (0.1591 ms): 12,288 x 1.6504 ms = 20.28 s before the 15
    # per-peer latencies. DeepEP: the NIC carries 0.12451171875 z (test above); the NVLink and
    # latency terms are the same, so the two differ by exactly 12,288 x (0.5 - 0.12451171875)
    # x z / 45e9 = 13.7618 s. HybridEP is timed as DeepEP (assumed)
    assert 20.28 <= nccl["ep_comm_s"] <= 20.28 * 1.02
    assert nccl["ep_comm_s"] - deep["ep_comm_s"] == pytest.approx(
        12288 * (0.5 - 0.12451171875) * 134217728 / 45e9, rel=1e-6)
    assert hyb["ep_comm_s"] == deep["ep_comm_s"]
    # ... and Megatron's alltoall dispatcher sorts the received rows by local expert (EP 16: 8
    # local experts; token_dispatcher.py L757-789, L803-822) where DeepEP permutes them once:
    # one row pass more, 4 x 4096 x 8 x 2048 x 2 = 536,870,912 bytes per MoE layer and pass,
    # x 48 layers x 64 micro-batches x 2 passes / (3350e9 x 0.9) = 1.0941 s of element-wise time
    assert nccl["elementwise_s"] - deep["elementwise_s"] == pytest.approx(
        2 * 48 * 64 * 536_870_912 / (3350e9 * 0.9), rel=1e-6)
    assert nccl["step_time_s"] - deep["step_time_s"] == pytest.approx(
        nccl["ep_comm_s"] - deep["ep_comm_s"] + nccl["elementwise_s"] - deep["elementwise_s"],
        rel=1e-9)


def test_frameworks_refuse_a_dispatcher_they_lack(run):
    # the layout each runs with the default dispatcher (torchtitan: FSDP, ZeRO-3; DeepSpeed:
    # ZeRO-1, bf16), then the dispatcher it lacks: the step names the rule
    base = QWEN[:12]
    tt = run(*base, "--framework", "torchtitan", "--zero", "3")
    assert "although its rules reject" not in tt.out
    tt = run(*base, "--framework", "torchtitan", "--zero", "3", "--moe-dispatcher", "hybridep")
    assert "no HybridEP (torchtitan/config/job_config.py L474)" in " ".join(tt.out.split())
    ds = run(*base, "--framework", "deepspeed", "--zero", "1")
    assert "although its rules reject" not in ds.out
    ds = run(*base, "--framework", "deepspeed", "--zero", "1", "--moe-dispatcher", "deepep")
    assert "deepspeed/moe/sharded_moe.py L97-104" in " ".join(ds.out.split())


def test_deepep_refuses_padding_to_capacity(run):
    r = run(*QWEN, "--moe-dispatcher", "deepep", "--moe-pad-expert-input-to-capacity")
    assert r.code == 2 and "L1754-1761" in r.err and "\n" not in r.err.strip()


def test_exports_write_the_dispatcher(run, tmp_path):
    base = ("plan", "qwen3-30b-a3b", "--node", "dgx-h100", "--nodes", "2", "--ep", "16",
            "--tp", "1", "--pp", "1")
    out = tmp_path / "run.sh"
    r = run(*base, "--framework", "megatron", "--moe-dispatcher", "hybridep",
            "--export", "megatron", "-o", out)
    assert r.code == 0
    text = out.read_text()
    # transformer_config.py L891 (moe_token_dispatcher_type 'flex'), L898 (the backend)
    assert "--moe-token-dispatcher-type flex" in text
    assert "--moe-flex-dispatcher-backend hybridep" in text
    assert "--moe-token-dispatcher-type alltoall" not in text
    # the default names the dispatcher the step timed: Megatron-LM's own default is allgather
    # (transformer_config.py L891), an all-gather of the EP group's tokens, not an all-to-all
    plain = tmp_path / "plain.sh"
    assert run(*base, "--framework", "megatron", "--export", "megatron", "-o", plain).code == 0
    assert plain.read_text().count("--moe-token-dispatcher-type alltoall") == 1
    # torchtitan's: tests/test_dispatcher_frameworks.py (its qwen3 model ignores deepep)
