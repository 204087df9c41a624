"""The placement grammar: every RLinf form, multi-node indices, process packing and clear errors."""

import pytest

from policy_and_value.runtime.placement import PlacementError, parse_placement


def _devices(p, comp):
    return [s.global_device for s in p.slots[comp]]


def test_all_shares_every_device():
    p = parse_placement({"env,rollout,actor": "all"}, 1, 2)
    assert _devices(p, "env") == _devices(p, "actor") == [0, 1]
    assert p.processes_on_device(0) == 3


@pytest.mark.parametrize(
    "spec,expected",
    [("3", [3]), (3, [3]), ("0,2,3", [0, 2, 3]), ("0-3", [0, 1, 2, 3]), ("0-3,5,14", [0, 1, 2, 3, 5, 14])],
)
def test_index_forms(spec, expected):
    p = parse_placement({"env": spec, "rollout": 0, "actor": 1}, num_nodes=2, devices_per_node=8)
    assert _devices(p, "env") == expected
    assert p.world_size("env") == len(expected)


def test_global_indices_map_to_nodes():
    p = parse_placement({"env": "0-3,5,14", "rollout": 0, "actor": 1}, num_nodes=2, devices_per_node=8)
    last = p.slots["env"][-1]
    assert (last.node, last.local_device, last.rank, last.world_size) == (1, 6, 5, 6)


def test_process_packing_two_per_device():
    p = parse_placement({"env,rollout": 0, "actor": "0-1:0-3"}, 1, 2)
    assert _devices(p, "actor") == [0, 0, 1, 1]
    assert p.processes_on_device(0) == 4 and p.processes_on_device(1) == 2
    assert "actor[3]" in p.describe()


def test_separate_components():
    p = parse_placement({"env": 0, "rollout": 1, "actor": 2}, 1, 3)
    assert [p.processes_on_device(d) for d in range(3)] == [1, 1, 1]


@pytest.mark.parametrize(
    "placement,fragment",
    [
        ({"env,rollout,actor": "4"}, "device 4 does not exist"),
        ({"env,rollout,actor": "0-x"}, "cannot parse"),
        ({"env,rollout,actor": "3-1"}, "cannot parse"),
        ({"env,rollout": "0"}, "no placement for actor"),
        ({"env,rollout,actor": "0", "actor": "1"}, "placed twice"),
        ({"env,rollout,critic": "0"}, "unknown component 'critic'"),
        ({"env,rollout": 0, "actor": "0-1:0-2"}, "do not spread evenly"),
        ({"env,rollout": 0, "actor": "0-1:1-4"}, "process ranks must be 0..P-1"),
        ({"env,rollout": 0, "actor": "0,0"}, "listed twice"),
    ],
)
def test_errors_are_one_line_and_name_the_key(placement, fragment):
    with pytest.raises(PlacementError) as e:
        parse_placement(placement, 1, 4)
    msg = str(e.value)
    assert fragment in msg and "\n" not in msg and "cluster.component_placement" in msg
