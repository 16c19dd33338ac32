"""`--tokens`' time, GPU-hours, energy and cost (analyses/train_time.py, equations/train.py) by
hand: the sampled mutation run of 2026-11-26 (docs/hardening.md, "Mutation score") found the
GPU-hour and energy equations pinned by no test of its selection."""

import pytest

from optimus_calc.analyses.train_time import train_time


def test_train_time_by_hand():
    # 10 s steps of 1,024 x 4,096 = 4,194,304 tokens, 1e12 tokens, 1,024 GPUs of 700 W, PUE 1.2,
    # $2 per GPU-hour:
    #   steps = 1e12 / 4,194,304 = 238,418.5791015625 (Narayanan et al. SC'21 sec. 5.1 eq. 4)
    #   time = 10 x steps = 2,384,185.791015625 s = 27.594743 days
    #   GPU-hours = 1,024 x 2,384,185.791 s / 3,600 = 2.44140625e9 GPU-s / 3,600 = 678,168.40277...
    #   energy = 2.44140625e9 GPU-s x 700 W x 1.2 / 3.6e9 J per MWh = 2,050.78125 / 3.6
    #          = 569.661458333... MWh (exact fractions: compared to 1e-12)
    #   cost = 678,168.40277... x $2 = $1,356,336.80555...
    t = train_time(10.0, 1024 * 4096, 1e12, 1024, 700.0, 1.2, gpu_hour_price=2.0)
    assert t.steps == pytest.approx(238_418.5791015625, rel=1e-12)
    assert t.time_s == pytest.approx(2_384_185.791015625, rel=1e-12)
    assert t.train_days == pytest.approx(27.594743, rel=1e-7)
    assert t.gpu_hours == pytest.approx(2.44140625e9 / 3600, rel=1e-12)
    assert t.energy_MWh == pytest.approx(2050.78125 / 3.6, rel=1e-12)
    assert t.cost_usd == pytest.approx(2 * 2.44140625e9 / 3600, rel=1e-12)


def test_train_time_without_power_or_price_leaves_them_out():
    t = train_time(10.0, 1024 * 4096, 1e12, 1024, 0.0, 1.2)
    assert t.energy_MWh is None and t.cost_usd is None
    assert t.gpu_hours == pytest.approx(678_168.4028, rel=1e-9)
