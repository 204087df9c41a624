"""Episode format round trip, loader filters, and the collection CLI on a tiny dataset."""

import json
import subprocess
import sys

import numpy as np
import pytest

from toolkits.episodes import Episode, EpisodeDataset, EpisodeWriter


def _episode(T=5, success=True, task="reach-v3"):
    rng = np.random.default_rng(T)
    return Episode(
        images=rng.integers(0, 255, (T + 1, 2, 8, 8, 3), dtype=np.uint8),
        state=rng.normal(size=(T + 1, 39)).astype(np.float32),
        actions=rng.uniform(-1, 1, (T, 4)).astype(np.float32),
        rewards=rng.uniform(size=T).astype(np.float32),
        success=np.array([False] * (T - 1) + [success]),
        meta={"prompt": "reach the goal position", "task": task, "task_id": 0, "success_once": success},
    )


def test_write_and_load_round_trip_with_filters(tmp_path):
    w = EpisodeWriter(str(tmp_path), info={"seed": 0})
    eps = [_episode(5, True), _episode(7, False), _episode(4, True, "push-v3")]
    for ep in eps:
        w.write(ep)
    w.close({"reach-v3": {"success_rate": 0.5}})
    ds = EpisodeDataset(str(tmp_path))
    assert (
        len(ds) == 3 and ds.tasks == ["push-v3", "reach-v3"] and ds.summary["reach-v3"]["success_rate"] == 0.5
    )
    back = ds[1]
    for k in ("images", "state", "actions", "rewards", "success"):
        assert np.array_equal(getattr(back, k), getattr(eps[1], k))
    assert back.meta["prompt"] == "reach the goal position" and back.length == 7
    assert len(EpisodeDataset(str(tmp_path), tasks=["reach-v3"], success=True)) == 1
    assert ds.read(0, "images", slice(0, 2)).shape == (2, 2, 8, 8, 3)


def test_subset_keeps_per_task_counts_info_and_frames(tmp_path):
    """write_subset copies k successful and m failed episodes of each task, bit-identical, with the info
    (e.g. labels); the CLI refuses to overwrite."""
    from toolkits.episodes.subset import main, write_subset

    src = str(tmp_path / "src")
    w = EpisodeWriter(src, info={"cameras": ["corner"], "labels": {"horizon": 2}})
    for task in ("reach-v3", "push-v3"):
        for T, ok in ((3, True), (4, True), (5, True), (6, False), (7, False)):
            w.write(_episode(T, ok, task))
    w.close()
    assert write_subset(src, str(tmp_path / "dst"), per_task=2, failed_per_task=1, seed=0) == 6
    sub = EpisodeDataset(str(tmp_path / "dst"))
    assert sub.info["labels"] == {"horizon": 2} and sub.info["subset_of"] == src
    for task in ("reach-v3", "push-v3"):
        assert len(EpisodeDataset(str(tmp_path / "dst"), tasks=[task], success=True)) == 2
        assert len(EpisodeDataset(str(tmp_path / "dst"), tasks=[task], success=False)) == 1
    full = {ep["file"]: i for i, ep in enumerate(EpisodeDataset(src).entries)}
    for i, entry in enumerate(sub.entries):
        assert np.array_equal(sub[i].images, EpisodeDataset(src)[full[entry["file"]]].images)
    with pytest.raises(FileExistsError, match="exists"):
        main(["--data", src, "--out", str(tmp_path / "dst"), "--per-task", "1"])


def test_loader_rejects_foreign_folders(tmp_path):
    with pytest.raises(FileNotFoundError, match="index.json"):
        EpisodeDataset(str(tmp_path))
    (tmp_path / "index.json").write_text(json.dumps({"format": "other", "version": 9}))
    with pytest.raises(ValueError, match="expected worldrl-episodes"):
        EpisodeDataset(str(tmp_path))


@pytest.mark.slow
def test_collect_cli_records_expert_and_failed_episodes(tmp_path):
    out = tmp_path / "ds"
    proc = subprocess.run(
        [sys.executable, "-m", "toolkits.collect_episodes", "--tasks", "reach-v3", "--episodes-per-task", "4",
         "--out", str(out), "--cameras", "corner", "gripperPOV", "--image-size", "32", "--fail-fraction", "0.5",
         "--num-envs", "4", "--max-episode-steps", "150", "--seed", "1"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    ds = EpisodeDataset(str(out))
    assert len(ds) == 4
    forced = [e["forced_failure"] for e in ds.entries]
    assert any(forced) and not all(forced)
    for i, e in enumerate(ds.entries):
        ep = ds[i]
        assert ep.images.shape[1:] == (2, 32, 32, 3) and ep.images.shape[0] == ep.length + 1
        assert ep.state.shape == (ep.length + 1, 39) and ep.actions.shape == (ep.length, 4)
        if not e["forced_failure"]:
            assert (
                e["success_once"] and ep.success[-1]
            )  # the expert solves reach; the episode ends at success
    assert ds.summary["reach-v3"]["expert_success_rate"] == 1.0


def test_collect_layout_seed_draws_other_layouts(tmp_path):
    from toolkits.collect_episodes import collect

    goals = {}
    for layout_seed in (0, 1):
        writer = EpisodeWriter(str(tmp_path / str(layout_seed)))
        collect(["reach-v3"], 1, ["corner"], 16, 0.0, 0.0, 2, 0, num_envs=1, writer=writer,
                log=lambda *_: None, layout_seed=layout_seed)  # fmt: skip
        writer.close({})
        goals[layout_seed] = EpisodeDataset(str(tmp_path / str(layout_seed)))[0].state[0, 36:]
    assert not np.allclose(goals[0], goals[1])  # the same seed, another benchmark of 50 layouts


def test_collect_cli_bad_argument_is_one_line(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "toolkits.collect_episodes", "--tasks", "reach-v3", "--fail-fraction", "1.5", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert (
        proc.returncode == 2
        and proc.stderr.strip() == "error: --fail-fraction=1.5: allowed: a share in [0, 1]"
    )


@pytest.mark.slow
def test_our_peg_insert_side_expert_inserts_the_peg():
    from toolkits.collect_episodes import collect, expert_for
    from toolkits.experts import PegInsertSidePolicy

    assert isinstance(expert_for("peg-insert-side-v3"), PegInsertSidePolicy)
    summary = collect(["peg-insert-side-v3"], 4, ["corner"], 64, 0.0, 0.0, 150, 0, num_envs=4,
                      use_images=False, log=lambda *_: None)  # fmt: skip
    assert summary["peg-insert-side-v3"]["success_rate"] == 1.0


def test_collect_with_a_policy_records_its_own_reproducible_samples(tmp_path):
    """--policy-dir: the shipped pi0 policy acts chunk by chunk; its flow-SDE samples are seeded (same seed,
    same actions), differ from its deterministic actions, and the episodes say who acted and how."""
    from toolkits.collect_episodes import collect

    def run(name: str, noise_level: float, seed: int = 3) -> EpisodeDataset:
        writer = EpisodeWriter(str(tmp_path / name))
        collect(["reach-v3"], 2, ["corner", "gripperPOV"], 64, 0.0, 0.0, 8, seed, num_envs=2, writer=writer,
                log=lambda *_: None, policy_dir="assets/quickstart/policy", noise_level=noise_level)  # fmt: skip
        writer.close()
        return EpisodeDataset(str(tmp_path / name))

    a, b, ode = run("a", 0.1), run("b", 0.1), run("ode", 0.0)
    assert len(a) == 2 and a.entries[0]["policy"] == "pi0 assets/quickstart/policy"
    assert a.entries[0]["noise_level"] == 0.1 and a[0].actions.shape == (8, 4) and a[0].images.shape[0] == 9
    assert all(np.array_equal(a[i].actions, b[i].actions) for i in range(2))
    assert not np.allclose(a[0].actions, ode[0].actions)


def test_collect_imagined_plans_replays_what_the_policy_did_in_the_world_model(tmp_path, monkeypatch):
    """--imagine: each episode is first played in the config's world model from the simulator's start frame and
    state, and Meta-World then records those actions, one per step; the episodes name the model."""
    from policy_and_value.config import load_config
    from toolkits import collect_episodes as ce

    plans, worth = [], []
    plan_of = ce.ImaginedPlanActor.__call__

    def spy(self, obs):
        fresh = self.plan is None
        action = plan_of(self, obs)
        if fresh:
            plans.append(self.plan.copy())
            worth.append(self.imagined_return.copy())
        return action

    monkeypatch.setattr(ce.ImaginedPlanActor, "__call__", spy)
    world = load_config("rl_metaworld_dense_wm").env.train
    tasks = ["reach-v3", "button-press-topdown-v3", "door-open-v3"]
    writer = EpisodeWriter(str(tmp_path / "plans"))
    ce.collect(tasks, 1, ["corner", "gripperPOV"], 64, 0.0, 0.0, 8, 3, num_envs=3, writer=writer,
               log=lambda *_: None, policy_dir="assets/metaworld_outcome/policy", noise_level=0.5,
               imagine=world)  # fmt: skip
    writer.close()
    data = EpisodeDataset(str(tmp_path / "plans"))
    assert len(plans) == 1 and plans[0].shape == (3, 8, 4)
    for i in range(3):
        assert np.array_equal(data[i].actions, plans[0][i, : len(data[i].actions)])
    assert f"planned in the world model of {world.state_model_config}" in data.entries[0]["policy"]
    # each plan's worth in imagination is kept beside its real outcome, in its own env's episode
    assert [e["imagined_return"] for e in data.entries] == pytest.approx(list(worth[0]))
    assert all(isinstance(e["imagined_success"], bool) for e in data.entries)
    # RL's shares of env groups do not apply to the plans (these weights would give the 3 envs door, reach, door)
    weighted = world.model_copy(update={"task_weights": [1.0, 1.0, 4.0]})
    ce.collect(tasks, 1, ["corner", "gripperPOV"], 64, 0.0, 0.0, 4, 3, num_envs=3, log=lambda *_: None,
               policy_dir="assets/metaworld_outcome/policy", noise_level=0.5, imagine=weighted)  # fmt: skip
    assert len(plans) == 2 and plans[1].shape == (3, 4, 4)
    with pytest.raises(SystemExit, match=r"env.train.tasks=\['reach-v3', 'button-press-topdown-v3', 'door-open-v3'\]; "
                       r"expected --tasks \['door-open-v3', 'button-press-topdown-v3', 'reach-v3'\]"):  # fmt: skip
        ce.collect(tasks[::-1], 1, ["corner", "gripperPOV"], 64, 0.0, 0.0, 8, 3, num_envs=3, log=lambda *_: None,
                   policy_dir="assets/metaworld_outcome/policy", noise_level=0.5, imagine=world)  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "toolkits.collect_episodes", "--tasks", "reach-v3", "--imagine", "rl_metaworld_dense_wm",
         "--out", str(tmp_path / "x")], capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2 and proc.stderr.strip() == (
        "error: --imagine=rl_metaworld_dense_wm: allowed: with --policy-dir only (the policy plays in the world model)"
    )


def test_imagine_reads_the_job_for_its_policy_and_needs_one_everywhere(tmp_path, monkeypatch, capsys):
    """--imagine composes its job with --policy-dir as rollout.model_dir (the job's own may not exist where the
    policy does), the user's overrides after it; LIBERO refuses --imagine without --policy-dir as Meta-World does."""
    import policy_and_value.config as config
    from toolkits import collect_episodes as ce

    seen, load = [], config.load_config

    def spy(name, overrides=None, config_dir=None):
        cfg = load(name, overrides, config_dir)
        seen.append((overrides, cfg.rollout.model_dir, cfg.env.train.state_model_config))
        return cfg

    class Stop(Exception):
        pass

    monkeypatch.setattr(config, "load_config", spy)
    monkeypatch.setattr(ce, "collect", lambda *a, **k: (_ for _ in ()).throw(Stop()))
    policy, model = "assets/metaworld_outcome/policy", "assets/world_models/state_outcome20_both/model"
    with pytest.raises(Stop):
        ce.main(["--tasks", "reach-v3", "--policy-dir", policy, "--imagine", "rl_metaworld_dense_wm",
                 f"env.train.state_model_config={model}", "--out", str(tmp_path / "x")])  # fmt: skip
    assert seen == [([f"rollout.model_dir={policy}", f"env.train.state_model_config={model}"], policy, model)]
    with pytest.raises(SystemExit) as exit_:
        ce.parse_args(
            ["--suite", "libero_object", "--imagine", "rl_libero_obs_wm_value", "--out", str(tmp_path / "y")]
        )
    assert exit_.value.code == 2 and capsys.readouterr().err.strip() == (
        "error: --imagine=rl_libero_obs_wm_value: allowed: with --policy-dir only (the policy plays in the world model)"
    )


def test_merge_renumbers_tasks_and_refuses_mixed_cameras(tmp_path):
    """merge_datasets: every episode of both datasets, bit-identical, task ids over the union in order of
    appearance, origin recorded; different cameras or an existing --out are refused."""
    from toolkits.episodes.merge import main, merge_datasets

    def dataset(name: str, tasks: list[str], cameras: list[str]) -> str:
        w = EpisodeWriter(str(tmp_path / name))
        for T, task in enumerate(tasks, start=3):
            ep = _episode(T, True, task)
            w.write(Episode(ep.images, ep.state, ep.actions, ep.rewards, ep.success,
                            {**ep.meta, "cameras": cameras, "image_size": 8}))  # fmt: skip
        w.close()
        return str(tmp_path / name)

    first = dataset("expert", ["reach-v3", "push-v3"], ["corner"])
    second = dataset("policy", ["push-v3", "drawer-close-v3"], ["corner"])
    assert merge_datasets([first, second], str(tmp_path / "both")) == 4
    both = EpisodeDataset(str(tmp_path / "both"))
    assert [e["task_id"] for e in both.entries] == [0, 1, 1, 2]
    assert [e["merged_from"] for e in both.entries] == [first, first, second, second]
    assert np.array_equal(both[3].images, EpisodeDataset(second)[1].images)
    other = dataset("other", ["reach-v3"], ["topview"])
    with pytest.raises(ValueError, match="different cameras"):
        merge_datasets([first, other], str(tmp_path / "mixed"))
    with pytest.raises(FileExistsError, match="exists"):
        main(["--data", first, "--out", str(tmp_path / "both")])
