"""`comm`'s flags are never silently ignored and share the tool's bounds (a cold review: each
test failed before the fix)."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("flags,named", [
    (("--compress-on", "gpu"), "--compress-on applies"),
    (("--approach", "2"), "--approach applies"),
    (("--compress-on", "gpu", "--approach", "2"), "--compress-on and --approach apply"),
])
def test_squeezenic_flags_without_compression_are_errors(run, flags, named):
    # exit 0 with the uncompressed ring before: the flag did nothing and nothing said so
    r = run("comm", "all-reduce", "--size", "1GB", "--nodes", 2, *flags)
    assert r.code == 2 and r.out == ""
    assert r.err.strip().splitlines() == [f"error: {named} with --compression R (SqueezeNIC)"]


def test_ranks_are_bounded_like_every_gpu_count(run):
    # at most 1,000,000 GPUs (docs/guide/errors.md; evaluate/context.MAX_GPUS), as --nodes x
    # GPUs per node is in step and memory; --ranks took 10,000,000
    r = run("comm", "all-reduce", "--size", "1GB", "--ranks", 10_000_000, "--node", "gh200")
    assert r.code == 2 and "--ranks" in r.err and "1000000" in r.err
    assert len(r.err.strip().splitlines()) == 1
    assert run("comm", "all-reduce", "--size", "1GB", "--ranks", 1_000_000, "--node",
               "gh200").code == 0
