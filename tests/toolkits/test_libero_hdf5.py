"""LIBERO's published demonstration layout (robomimic-style HDF5) imported as the project's episodes,
from a small file the test writes in that exact layout."""

import json

import h5py
import numpy as np
import pytest

from toolkits.episodes import EpisodeDataset
from toolkits.episodes.libero_hdf5 import LiberoHdf5Error, main

TASK = "pick_up_the_alphabet_soup_and_place_it_in_the_basket"


def _write_demo_file(path, lengths=(5, 3), size=16):
    """Two demos as LIBERO's create_dataset.py lays them out (plus the keys the import ignores)."""
    rng = np.random.default_rng(0)
    with h5py.File(path, "w") as f:
        data = f.create_group("data")
        data.attrs["problem_info"] = json.dumps(
            {"problem_name": "libero_tabletop_manipulation", "domain_name": "robosuite",
             "language_instruction": "pick up the alphabet soup and place it in the basket"}
        )  # fmt: skip
        data.attrs["bddl_file_name"] = f"libero/libero/bddl_files/libero_object/{TASK}.bddl"
        data.attrs["env_args"] = json.dumps({"type": 1, "env_name": "Libero_Tabletop_Manipulation"})
        data.attrs["num_demos"] = len(lengths)
        for i, T in enumerate(lengths):
            demo = data.create_group(f"demo_{i}")
            demo.attrs["num_samples"] = T
            demo.create_dataset("actions", data=rng.uniform(-1, 1, (T, 7)))
            demo.create_dataset("dones", data=np.eye(T, dtype=np.uint8)[-1])
            demo.create_dataset("rewards", data=np.eye(T, dtype=np.uint8)[-1])
            demo.create_dataset("states", data=rng.normal(size=(T, 79)))
            demo.create_dataset("robot_states", data=rng.normal(size=(T, 9)))
            obs = demo.create_group("obs")
            obs.create_dataset("agentview_rgb", data=rng.integers(0, 255, (T, size, size, 3), dtype=np.uint8))
            obs.create_dataset(
                "eye_in_hand_rgb", data=rng.integers(0, 255, (T, size, size, 3), dtype=np.uint8)
            )
            obs.create_dataset("ee_states", data=rng.normal(size=(T, 6)))
            obs.create_dataset("ee_pos", data=rng.normal(size=(T, 3)))
            obs.create_dataset("ee_ori", data=rng.normal(size=(T, 3)))
            obs.create_dataset("gripper_states", data=rng.normal(size=(T, 2)))
            obs.create_dataset("joint_states", data=rng.normal(size=(T, 7)))


def test_demos_become_episodes_as_the_libero_env_observes(tmp_path):
    src = tmp_path / f"{TASK}_demo.hdf5"
    _write_demo_file(src)
    assert main(["--input", str(tmp_path), "--out", str(tmp_path / "eps")]) == 0
    ds = EpisodeDataset(str(tmp_path / "eps"))
    assert len(ds) == 2 and ds.tasks == [TASK]
    ep = ds[0]
    with h5py.File(src, "r") as f:
        demo = f["data/demo_0"]
        assert ep.images.shape == (6, 2, 16, 16, 3)  # 5 actions, 6 frames (the last repeated)
        np.testing.assert_array_equal(
            ep.images[0, 0], demo["obs/agentview_rgb"][0][::-1, ::-1]
        )  # 180 degrees
        np.testing.assert_array_equal(ep.images[2, 1], demo["obs/eye_in_hand_rgb"][2][::-1, ::-1])
        np.testing.assert_array_equal(ep.images[-1], ep.images[-2])
        np.testing.assert_allclose(
            ep.state[1], np.concatenate([demo["obs/ee_states"][1], demo["obs/gripper_states"][1]]), rtol=1e-6
        )
        np.testing.assert_allclose(ep.actions, demo["actions"][()], rtol=1e-6)
    assert ep.success.tolist() == [False, False, False, False, True]
    assert ep.meta["prompt"] == "pick up the alphabet soup and place it in the basket"
    assert ep.meta["cameras"] == ["agentview", "robot0_eye_in_hand"] and ep.meta["final_obs_repeated"]
    assert ds[1].actions.shape == (3, 7) and ds[1].meta["task_id"] == 0


def test_a_file_in_another_layout_is_one_line_naming_the_key(tmp_path, capsys):
    src = tmp_path / "demo.hdf5"
    _write_demo_file(src)
    with h5py.File(src, "a") as f:
        del f["data/demo_1/obs/gripper_states"]
    assert main(["--input", str(src), "--out", str(tmp_path / "eps")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "data/demo_1 lacks 'obs/gripper_states'" in err
    with pytest.raises(LiberoHdf5Error, match="no such file"):
        from toolkits.episodes.libero_hdf5 import import_demos

        import_demos([str(tmp_path / "missing.hdf5")], str(tmp_path / "x"))


def test_frames_can_be_resized_to_the_jobs_image_size(tmp_path):
    _write_demo_file(tmp_path / "demo.hdf5", lengths=(2,))
    assert (
        main(["--input", str(tmp_path / "demo.hdf5"), "--out", str(tmp_path / "eps"), "--image-size", "8"])
        == 0
    )
    ep = EpisodeDataset(str(tmp_path / "eps"))[0]
    assert ep.images.shape == (3, 2, 8, 8, 3) and ep.meta["image_size"] == 8
