"""A calibration profile's assumptions against a framework profile's (review11): calibrate fits
moe_layer_host_s only on the runs whose framework sets none (a full-iteration CUDA graph and
DeepSpeed's gate hold no host sync: analyses/calibrate_fit.predict keeps their 0), but
`step --profile` let the fitted value override the framework's 0, so a graph run paid the
eager host sync it cannot have. The framework's value now wins over --profile's; --assume
still wins over both (frameworks/base.PhysicsProfile.apply, inputs.profile_only)."""

import pytest

QWEN = ("step", "qwen3-30b-a3b", "--node", "dgx-h100", "--nodes", "2", "--ep", "16", "--tp",
        "1", "--zero", "1", "--format", "json")
PROFILE = """[profile]
source = "test: a host sync fitted on eager runs"
runs = 3
gpu = "h100-sxm"

[assumptions]
moe_layer_host_s = 0.004
"""


@pytest.fixture
def prof(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text(PROFILE)
    return str(path)


def _fixed(run, *extra) -> float:
    r = run(*QWEN, *extra)
    assert r.code == 0, r.err
    return r.json()["fixed_s"]


def test_the_framework_value_wins_over_the_profile(run, prof):
    # 48 MoE layers x 32 micro-batches (512 / DP 16) = 1,536 per step
    mg = ("--framework", "megatron", "--moe-dispatcher", "hybridep")
    # eager Megatron sets neither constant: the profile's 4 ms sync + the 1.8 ms launches
    assert _fixed(run, *mg, "--profile", prof) == pytest.approx(1536 * 0.0058, rel=1e-9)
    # a full-iteration graph: 0 (it was 1,536 x 4 ms = 6.144 s, the profile's sync)
    assert _fixed(run, *mg, "--cuda-graph-impl", "full_iteration", "--profile", prof) == 0
    # DeepSpeed's gate syncs nothing: 1,536 x 1.8 ms = 2.7648 s (it was 9.216 s)
    ds = ("--framework", "deepspeed")
    assert _fixed(run, *ds, "--profile", prof) == pytest.approx(1536 * 0.0018, rel=1e-9)
    text = " ".join(run(*QWEN[:-2], *mg, "--cuda-graph-impl", "full_iteration",
                        "--profile", prof).out.split())
    assert "moe_layer_host_s=0" in text and "your values kept" not in text


def test_a_typed_value_still_wins(run, prof):
    mg = ("--framework", "megatron", "--moe-dispatcher", "hybridep", "--cuda-graph-impl",
          "full_iteration")
    assert _fixed(run, *mg, "--profile", prof, "--assume", "moe_layer_host_s=0.004") == \
        pytest.approx(1536 * 0.004, rel=1e-9)


def test_plan_applies_the_same_precedence(run, prof):
    args = ("plan", *QWEN[1:12], "--pp", "1", "--framework", "megatron", "--moe-dispatcher",
            "hybridep", "--cuda-graph-impl", "full_iteration", "--top", "1", "--format", "json")
    with_profile = run(*args, "--profile", prof).json()["recommended"]["step_time_s"]
    assert with_profile == pytest.approx(run(*args).json()["recommended"]["step_time_s"],
                                         rel=1e-12)
