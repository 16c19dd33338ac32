"""BLOOM-176B's training run as a public case (public_cases_mds.bloom_rows): its settings as the
BigScience scripts give them, the published step time checked against the same log line's
TFLOPs, and the prediction (framework-neutral physics, issue 32: every public row a case)."""

from __future__ import annotations

import pytest

from optimus_calc.public_cases_mds import bloom_rows
from optimus_calc.validate_public import setup


def test_the_row_is_the_log_line_and_the_slurm_script():
    row, small = bloom_rows()
    # tr11-176B-ml.slurm L66-75: TP 4, PP 12, MBS 2, GBS 2048, seq 2048; 48 nodes x 8 GPUs
    # (README L40-46): DP = 384 / 48 = 8; 2,048 / (8 x 2) = 128 micro-batches per step
    assert (row.tp, row.pp, row.nodes, row.mbs, row.gbs, row.seq) == (4, 12, 48, 2, 2048, 2048)
    assert (row.recompute, row.flash, row.sp, row.dropout) == ("full", False, False, True)
    assert (row.unit, row.published) == ("s", 104.70)
    # the same log line: 'samples per second: 19.561' -> 2,048 / 19.561 = 104.70 s; and
    # 'TFLOPs: 149.77' is Megatron-DeepSpeed's count with activation checkpointing,
    # 96 B s L h^2 (1 + s / 6h + V / 16 L h) / (time x GPUs): 96 x 2048 x 2048 x 70 x 14336^2 x
    # (1 + 2048 / 86016 + 250880 / 16,056,320) / (104.70 x 384) = 149.77e12
    assert 2048 / 19.561 == pytest.approx(104.70, abs=0.005)
    # the set-up test's line (README L245): global batch 16, 'samples per second: 1.051' ->
    # 16 / 1.051 = 15.22 s ('elapsed time per iteration (s): 15.23'), 'TFLOPs: 8.04' the same
    # count at B = 16
    assert (small.gbs, small.published) == (16, 15.23)
    assert 16 / 1.051 == pytest.approx(15.23, abs=0.02)
    flops = 96 * 2048 * 2048 * 70 * 14336 ** 2 * (1 + 2048 / (6 * 14336)
                                                  + 250880 / (16 * 70 * 14336))
    assert flops / (104.70 * 384) / 1e12 == pytest.approx(149.77, abs=0.01)
    assert flops * 16 / 2048 / (15.23 * 384) / 1e12 == pytest.approx(8.04, abs=0.01)


def test_the_prediction_runs_the_published_layout(cat):
    s = setup(cat, bloom_rows()[0])
    # DeepSpeed's pipeline engine reduces the gradients after the pipeline drains
    assert s.asm.dp_reduce_after_pipeline == 1
    assert (s.layout.tp, s.layout.pp, s.layout.dp) == (4, 12, 8)
    assert s.training.sequence_parallel is False and s.training.flash_attention is False
    assert s.hw.gpus == 384 and s.hw.node.nic == "omni-path-100"
    # 176,247M parameters (the BLOOM paper): the catalog's shape counts them within 0.1%
    assert s.model.total_params == pytest.approx(176.247e9, rel=1e-3)


def test_jean_zay_node_marks_what_the_readme_does_not_give(cat):
    # train/tr11-176B-ml/README.md L40-46 gives GPUs, NVLink, 4 OmniPath links, 512 GB and
    # 'CPU: AMD' only: the drive count and the GPU-host link are assumed, as the notes say
    node = cat.get("jean-zay-a100")
    for field in ("cpu", "nvme", "nvme_drives", "intra_link", "gpu_host_link"):
        assert field in node.assumed, field
    for field in ("gpus", "nics", "host_memory_GB"):
        assert field not in node.assumed, field


def test_each_row_cites_its_log_line_in_one_fold():
    # README.md L661-663 (104.70 s, global batch 2,048) and L237-245 (15.23 s, global batch 16;
    # L272: at MBS 2); one publication, so one leave-one-source-out fold for both
    from optimus_calc.validate_loso import fold_of
    row, small = bloom_rows()
    assert "L661-663" in row.source and "L237-245" in small.source
    assert fold_of(row.source) == fold_of(small.source)


def test_the_guide_states_the_two_rows_marginal_and_remainder():
    # golden validate.json: 93.94 s (GBS 2,048, 128 micro-batches per pipeline) and 8.78 s
    # (GBS 16, one): per micro-batch (93.94 - 8.78) / 127 = 0.671 s, published
    # (104.70 - 15.23) / 127 = 0.704 s (-5%); the rest 8.78 - 0.671 = 8.11 s against
    # 15.23 - 0.704 = 14.53 s (6.4 s short). Round 18 (before the run's 5, 6 x 10, 5 split):
    # 108.87 s and 10.23 s, 0.777 s (+10%), 9.45 s; round 15: 109.04 s and 10.24 s
    import json
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    cases = json.loads((root / "tests/golden/validate.json").read_text())["cases"]
    big, small = (next(c for c in cases if c["case"].startswith("BLOOM") and c["published"] == p)
                  for p in (104.70, 15.23))
    per_mb = (big["predicted"] - small["predicted"]) / 127
    pub_mb = (104.70 - 15.23) / 127
    assert per_mb == pytest.approx(0.671, abs=0.001) and pub_mb == pytest.approx(0.704, abs=0.001)
    assert per_mb / pub_mb - 1 == pytest.approx(-0.05, abs=0.01)
    rest, pub_rest = small["predicted"] - per_mb, 15.23 - pub_mb
    assert (rest, pub_rest) == (pytest.approx(8.11, abs=0.01), pytest.approx(14.53, abs=0.01))
    text = " ".join((root / "docs/guide/validate.md").read_text().split())
    for fact in ("= 0.67 s", "= 0.70 s", "5% less", "8.11 s against", "14.53 s", "6.4 s"):
        assert fact in text, fact
    assert "The marginal time per micro-batch agrees" not in text


def test_the_row_splits_the_pipeline_as_the_run(cat):
    # slurm L104: --pp-partition-method 'type:transformer|embedding': (70 + 2) / 12 = 6 items a
    # stage, the first and the last 5 layers + a tied embedding; the tool's split_layers(70, 12)
    # counts the embedding and the loss as a layer each where 70 + 2 divides 12 (round 19;
    # until then divmod(70, 12): 5, 5, then ten stages of 6, the last with the logits)
    from optimus_calc.evaluate.shapes import split_layers
    assert split_layers(70, 12) == [5] + [6] * 10 + [5]
    for row in bloom_rows():
        assert "'type:transformer|embedding'" in row.assumed and "5, 6 x 10, 5" in row.assumed
