"""Link and NIC efficiency as calibration candidates and profile tables (issue 21: "link
efficiency"). The "measurements" are the evaluator's own step times with the NIC efficiency
halved (applied through a profile), so the true value is known."""

import pytest

HALF = '[nic."connectx-6"]\nefficiency = 0.45\n'   # dgx-a100's NIC, catalog default 0.90
# Communication-heavy: ZeRO-3 DP over 2 and 4 dgx-a100, one micro-batch of 64-128 tokens per
# GPU, so the per-step all-gathers / reduce-scatters of 7B parameters over the NICs are not
# hidden behind the little compute (at the default NIC efficiency already mostly exposed). One or
# two micro-batches per step (ZeRO-3 gathers per micro-batch): with one each, every run's step is
# ~0.4 s and a per-step fixed cost (step_fixed_s) would explain them as well as the NIC.
LAYOUTS = [(2, 64, 1), (2, 128, 2), (4, 64, 2), (4, 128, 1)]   # nodes, seq_len, micro-batches


def step_json(run, *args):
    res = run("step", "llama-2-7b", "--node", "dgx-a100", *args, "--format", "json")
    assert res.code == 0, res.err
    return res.json()


def layout_args(nodes, seq, mbs=1):
    return ["--nodes", str(nodes), "--zero", "3", "--seq-len", str(seq), "--micro-batch", "1",
            "--global-batch", str(8 * nodes * mbs)]


def test_nic_efficiency_is_fitted_from_communication_bound_runs(run, tmp_path):
    half = tmp_path / "half.toml"
    half.write_text(HALF)
    lines = ["model,node,nodes,zero,seq_len,micro_batch,global_batch,measured_step_time_s"]
    for n, s, k in LAYOUTS:
        t = step_json(run, *layout_args(n, s, k), "--profile", half)["step_time_s"]
        lines.append(f"llama-2-7b,dgx-a100,{n},3,{s},1,{8 * n * k},{t!r}")
    runs = tmp_path / "runs.csv"
    runs.write_text("\n".join(lines) + "\n")
    prof = tmp_path / "fit.toml"
    res = run("calibrate", runs, "-o", prof, "--format", "json")
    assert res.code == 0, res.err
    rep = res.json()
    # Three of the four runs are NIC-bound at the defaults (elasticity ~0.73-0.76 on the NIC
    # efficiency, ~0 on the GEMM curve), so the NIC column is not collinear with the GEMM one.
    assert rep["fitted"]["nic_efficiency"] == pytest.approx(0.45, rel=0.10)
    # Single-scale-up-link runs' intra-node traffic is hidden: NVLink stays at its default.
    assert "link_efficiency" in rep["kept_at_default"]
    assert all(abs(r["error_after"]) < 0.02 for r in rep["runs"])
    text = prof.read_text()
    assert '[nic."connectx-6"]' in text and "efficiency = 0.4" in text
    # Applying the fitted profile reproduces a measured run (within 2%).
    again = step_json(run, *layout_args(4, 64), "--profile", prof)
    assert again["step_time_s"] == pytest.approx(
        step_json(run, *layout_args(4, 64), "--profile", half)["step_time_s"], rel=0.02)


def test_runs_that_hide_the_network_keep_the_nic_at_its_default(run, tmp_path):
    # One node: no NIC traffic at all, so the elasticity on the NIC efficiency is 0.
    base = step_json(run, "--nodes", "1")
    runs = tmp_path / "one.csv"
    runs.write_text("model,node,nodes,micro_batch,measured_step_time_s\n"
                    f"llama-2-7b,dgx-a100,1,1,{base['step_time_s'] * 1.1!r}\n"
                    f"llama-2-7b,dgx-a100,1,2,{step_json(run, '--micro-batch', '2')['step_time_s'] * 1.1!r}\n")
    res = run("calibrate", runs, "-o", tmp_path / "p.toml", "--format", "json")
    assert res.code == 0, res.err
    assert "barely depend" in res.json()["kept_at_default"]["nic_efficiency"]


def test_nic_profile_changes_communication_and_nothing_else(run, tmp_path):
    half = tmp_path / "half.toml"
    half.write_text(HALF)
    c0 = run("comm", "all-reduce", "--size", "1GB", "--nodes", "2", "--format", "json")
    c1 = run("comm", "all-reduce", "--size", "1GB", "--nodes", "2", "--profile", half,
             "--format", "json")
    assert c0.code == 0 and c1.code == 0, c1.err
    a, b = c0.json(), c1.json()
    # Ring over 16 ranks, 2 x 8 ConnectX-6 at 200 Gb/s = 25 GB/s: 2 * 15/16 * 1 GB = 1.875 GB
    # per node network of 8 x 25 x 0.90 = 180 GB/s (default) or 8 x 25 x 0.45 = 90 GB/s; the
    # alpha terms are unchanged, so the time grows by 1.875/90 - 1.875/180 = 0.0104167 s.
    assert a["topology"]["node_network_Bps"] == pytest.approx(180e9)
    assert b["topology"]["node_network_Bps"] == pytest.approx(90e9)
    assert b["time_s"] - a["time_s"] == pytest.approx(1.875 / 90 - 1.875 / 180, rel=1e-6)
    assert b["topology"]["intra_Bps"] == a["topology"]["intra_Bps"]
    assert b["profile"]["nics"] == {"connectx-6": {"efficiency": 0.45}}
    assert b["profile"]["links"] == {} and b["profile"]["gpus"] == {}
    table = run("comm", "all-reduce", "--size", "1GB", "--nodes", "2", "--profile", half)
    assert "sets the efficiency of nic connectx-6" in " ".join(table.out.split())
    # step: compute and memory unchanged, communication slower; a single node does not change.
    s0, s1 = step_json(run, *layout_args(2, 128)), step_json(run, *layout_args(2, 128),
                                                             "--profile", half)
    for same in ("compute_s", "forward_s", "backward_s", "gpu_memory_bytes", "tp_comm_s",
                 "pp_comm_s", "optimizer_s", "model_flops"):
        assert s1[same] == s0[same], same
    # the ZeRO-3 DP traffic crosses the NICs: at half their bandwidth it takes longer (less
    # than 2x: the intra-node NVLink phases and alpha terms are unchanged) and is exposed
    assert 1.3 * s0["dp_comm_s"] < s1["dp_comm_s"] <= 2 * s0["dp_comm_s"]
    assert s1["step_time_s"] > 1.3 * s0["step_time_s"]
    one0, one1 = step_json(run, "--nodes", "1"), step_json(run, "--nodes", "1", "--profile", half)
    assert one1["step_time_s"] == one0["step_time_s"]
    # a link table touches the scale-up link only: nvlink3 at half its efficiency slows the
    # single-node step's intra-node collectives, and leaves the NIC alone.
    link = tmp_path / "link.toml"
    link.write_text('[link."nvlink3"]\nefficiency = 0.385\n')
    c2 = run("comm", "all-reduce", "--size", "1GB", "--nodes", "1", "--profile", link,
             "--format", "json").json()
    c3 = run("comm", "all-reduce", "--size", "1GB", "--nodes", "1", "--format", "json").json()
    assert c2["topology"]["intra_Bps"] == pytest.approx(c3["topology"]["intra_Bps"] / 2)
    assert c2["topology"]["nic_Bps"] == c3["topology"]["nic_Bps"]
