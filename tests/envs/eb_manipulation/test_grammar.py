"""The 7-integer action grammar: bins <-> poses, edge bins, out-of-range values, validation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from envs.eb_manipulation import grammar as G


def test_every_position_bin_round_trips_through_its_cell_centre():
    for i in range(G.VOXEL_SIZE):
        p = G.bin_to_position([i, i, i])
        assert G.position_to_bin(p) == [i, i, i]
        assert G.position_to_action_bin(p) == [i, i, i]
    assert np.allclose(G.bin_to_position([0, 0, 0]), [-0.295, -0.495, 0.605])
    assert np.allclose(G.bin_to_position([99, 99, 99]), [0.695, 0.495, 1.595])


def test_edge_bins_and_out_of_range_values_extrapolate_without_clipping():
    # bin 100 is accepted and lands 5 mm outside the bounds
    assert np.allclose(G.bin_to_position([100, 100, 100]), [0.705, 0.505, 1.605])
    # observed bins are capped at 99 above, not clamped below
    assert G.position_to_bin([0.705, 0.9, 5.0]) == [99, 99, 99]
    assert G.position_to_bin([-0.305, -0.605, 0.5]) == [-1, -11, -10]
    assert np.allclose(G.bin_to_position([-10, 150, 0]), [-0.395, 1.005, 0.605])
    pose = G.action_to_pose([150, -20, 0, 240, 60, -60, 1])  # angles wrap: 240 == 0, -60 == 60
    assert np.allclose(pose.rotation, G.action_to_pose([150, -20, 0, 0, 60, 60, 1]).rotation)


def test_rotation_bins():
    assert G.bin_to_angle_deg(0) == -180 and G.bin_to_angle_deg(60) == 0 and G.bin_to_angle_deg(119) == 177
    assert np.allclose(G.action_to_pose([0, 0, 0, 120, 60, 60, 1]).rotation, G.action_to_pose([0, 0, 0, 0, 60, 60, 1]).rotation)
    assert G.angle_deg_to_bin(180) == 0 and G.angle_deg_to_bin(-180) == 0 and G.angle_deg_to_bin(3) == 61
    # extrinsic xyz: roll about world x first, then pitch about world y, then yaw about world z
    r = G.euler_xyz_to_matrix(math.pi / 2, 0, math.pi / 2)
    assert np.allclose(r @ [0, 1, 0], [0, 0, 1], atol=1e-12)  # y -(roll 90)-> z -(yaw 90)-> z
    assert np.allclose(r @ [1, 0, 0], [0, 1, 0], atol=1e-12)


def test_quaternion_is_xyzw():
    q = G.matrix_to_quat_xyzw(G.euler_xyz_to_matrix(0, 0, math.pi / 2))
    assert np.allclose(q, [0, 0, math.sin(math.pi / 4), math.cos(math.pi / 4)])
    cont = G.action_to_continuous([50, 50, 50, 60, 60, 60, 1])
    assert cont.shape == (8,) and np.allclose(cont[3:7], [0, 0, 0, 1]) and cont[7] == 1.0


def test_actions_round_trip_through_poses():
    rng = np.random.default_rng(0)
    for _ in range(300):
        a = [*rng.integers(0, 101, 3).tolist(), *rng.integers(0, 120, 3).tolist(), int(rng.integers(0, 2))]
        a[4] = int(rng.integers(31, 90))  # pitch away from the gimbal lock (|pitch| < 90 deg)
        pose = G.action_to_pose(a)
        back = G.pose_to_action(pose.position, pose.rotation, pose.gripper_open)
        assert back[:3] == a[:3] and back[6] == a[6]
        assert np.allclose(G.action_to_pose(back).rotation, pose.rotation, atol=1e-9)
        assert back[3:6] == a[3:6]


@pytest.mark.parametrize("bad", ["[1,2,3,4,5,6,7]", None, 7, [1, 2, 3], [1, 2, 3, 4, 5, 6, 7, 8],
                                 [1, 2, 3, 4, 5, 6, 0.5], [1, 2, 3, 4, 5, 6, True], [[1, 2, 3, 4, 5, 6, 7]],
                                 [1, 2, 3, 4, 5, "6", 1], np.zeros((7, 1))])
def test_malformed_actions_are_refused_with_a_reason(bad):
    with pytest.raises(G.ActionFormatError) as e:
        G.validate_action(bad)
    assert str(e.value)


def test_integral_floats_and_numpy_ints_are_accepted():
    assert G.validate_action([1.0, 2.0, 3, np.int64(4), np.float32(5), 6, 0]) == [1, 2, 3, 4, 5, 6, 0]
    assert G.validate_action(np.arange(7)) == list(range(7))


def test_non_finite_detection():
    assert G.is_non_finite([1, 2, float("nan"), 4, 5, 6, 1])
    assert G.is_non_finite(np.array([1, 2, 3, 4, 5, 6, np.inf]))
    assert not G.is_non_finite([1, 2, 3, 4, 5, 6, 1])
    assert not G.is_non_finite(None) and not G.is_non_finite("nan") and not G.is_non_finite([None] * 7)
