"""Groups that do not tile a node (evaluate/topology.placement): the slowest group straddles two
nodes, crossing on the fewer side's NICs. Megatron-core lays groups out in blocks of size x
stride consecutive ranks (parallel_state.py initialize_model_parallel, its rank order)."""

import numpy as np
import pytest

from optimus_calc.evaluate.context import resolve_hardware
from optimus_calc.evaluate.topology import placement


@pytest.fixture
def nvl72(cat):
    return resolve_hardware(cat, "gb200-nvl72", 2)  # 72 GPUs a rack


def test_blocks_that_tile_the_node_stay_as_they_were(cat, nvl72):
    h100 = resolve_hardware(cat, "dgx-h100", 3)
    # 8 of 8, 16 over 2 nodes, 6 ranks 4 apart in blocks of 24 = 3 nodes (2 a node)
    assert [tuple(map(int, placement(h100, n, s))) for n, s in ((8, 1), (16, 1), (6, 4))] == \
        [(8, 1), (8, 2), (2, 3)]
    # 8 and 72 tile a 72-GPU rack; 144 is two racks
    assert [tuple(map(int, placement(nvl72, n, 1))) for n in (8, 72, 144)] == \
        [(8, 1), (72, 1), (72, 2)]


def test_a_block_across_the_rack_boundary_is_the_slowest_group(cat, nvl72):
    # EP 16 on 72-GPU racks: blocks 0-15, ..., 48-63, then 64-79 holds 8 GPUs of rack 0 and
    # 8 of rack 1: 8 a node over 2 nodes (it was priced as 16 inside one rack)
    assert tuple(map(int, placement(nvl72, 16, 1))) == (8, 2)
    # EP 64: 64-127 holds 8 of rack 0 (64-71) and 56 of rack 1: the fewer side, 8
    assert tuple(map(int, placement(nvl72, 64, 1))) == (8, 2)
    # 16 ranks 4 apart (blocks of 64): in 64-127, ranks 64 + q + 4i below 72 are i = 0, 1
    assert tuple(map(int, placement(nvl72, 16, 4))) == (2, 2)
    # a DP group of 3 on 8-GPU nodes: 6, 7 | 8 is split 2 + 1
    h100 = resolve_hardware(cat, "dgx-h100", 3)
    assert tuple(map(int, placement(h100, 3, 1))) == (1, 2)
    # arrays: each element as alone
    m, n = placement(nvl72, np.array([16, 8, 64]), np.array([1, 1, 1]))
    assert m.tolist() == [8, 8, 8] and n.tolist() == [2, 1, 2]


def test_ep16_on_two_nvl72_racks_pays_the_network(run):
    # Qwen3-235B-A22B (128 experts), EP 16 on 2 racks of 72: the group 64-79 crosses racks,
    # half of each of its GPUs' buffer leaves NVLink for one NIC (4.74 s of EP time against
    # 0.51 s); with 64 GPUs a rack every EP group is inside one
    args = ("step", "qwen3-235b-a22b", "--node", "gb200-nvl72", "--nodes", "2", "--ep", "16",
            "--tp", "1", "--pp", "1", "--zero", "1", "--framework", "megatron", "--format", "json")
    r72 = run(*args).json()
    r64 = run(*args[:6], "--gpus-per-node", "64", *args[6:]).json()
    assert r72["ep_comm_s"] > 3 * r64["ep_comm_s"]
