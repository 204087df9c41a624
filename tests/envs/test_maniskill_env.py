"""The ManiSkill3 env (env_type maniskill) behind the batched env contract: observations, seeded resets,
success, episode limits, frames only at chunk ends, the scripted experts on a short horizon, collection,
config validation (missing driver included) and a job that trains and evaluates."""

from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from policy_and_value.config import load_config
from policy_and_value.config.schema import EnvConfig, env_config
from policy_and_value.envs import maniskill_tasks
from policy_and_value.envs.maniskill_env import axis_angle
from policy_and_value.envs.maniskill_tasks import ACTION_DIM, STATE_DIM, TASKS
from policy_and_value.envs.registry import make_env
from tests.envs.simulator_contract import check_success_rewards_once, check_truncation_at_the_step_limit
from toolkits.base.errors import ConfigError
from toolkits.experts import ManiSkillCubePolicy

pytestmark = pytest.mark.slow  # a ManiSkill env takes a second or two to build, rendering compiles shaders
REPO = Path(__file__).resolve().parents[2]


def _cfg(**kw) -> EnvConfig:
    base = yaml.safe_load((REPO / "configs" / "env" / "maniskill_3tasks.yaml").read_text())
    return env_config(
        **{**base, "tasks": ["PickCube-v1", "StackCube-v1"], "image_size": 32, "num_action_chunks": 4, **kw}
    )


@pytest.fixture(scope="module")
def env():
    e = make_env(_cfg(), 2, seed=0)
    yield e
    e.close()


def test_observation_contract(env):
    obs, info = env.reset(reset_state_ids=torch.tensor([0, 1]))
    assert obs["images"].shape == (2, 1, 32, 32, 3) and obs["images"].dtype == torch.uint8
    assert obs["state"].shape == (2, STATE_DIM) and obs["task_id"].tolist() == [0, 1]
    assert obs["prompt"] == [TASKS["PickCube-v1"][0], TASKS["StackCube-v1"][0]]
    assert info["reset_state_ids"].tolist() == [0, 1]
    assert env.spec.action_dim == ACTION_DIM and env.spec.image_shape == (1, 32, 32)
    assert torch.allclose(obs["state"][:, 6:], torch.tensor(0.04))  # the gripper starts open
    obs, rewards, terminated, truncated, info = env.chunk_step(torch.zeros(2, 4, ACTION_DIM))
    assert rewards.shape == (2, 4) and not terminated.any() and not truncated.any() and "episode" not in info
    assert obs["images"].float().std() > 0  # a scene, not a blank frame


def test_a_reset_state_id_seeds_one_layout(env):
    env.reset(reset_state_ids=torch.tensor([7, 7]))
    a = env.privileged_obs(0)["cube"]
    a_frames = env._render(np.arange(2))
    env.reset(reset_state_ids=torch.tensor([7, 7]))
    assert np.array_equal(env.privileged_obs(0)["cube"], a) and np.array_equal(
        env._render(np.arange(2)), a_frames
    )
    env.reset(reset_state_ids=torch.tensor([8, 8]))
    assert not np.allclose(env.privileged_obs(0)["cube"], a)  # another id, another layout


def test_actions_move_the_end_effector_and_frames_come_at_chunk_ends_only(env, monkeypatch):
    obs, _ = env.reset(reset_state_ids=torch.tensor([0, 0]))
    calls = []
    render = env._render
    monkeypatch.setattr(env, "_render", lambda ids: calls.append(len(ids)) or render(ids))
    actions = torch.zeros(2, 4, ACTION_DIM)
    actions[:, :, 2] = 1.0  # up, 10 cm per step at most
    after, _, _, _, _ = env.chunk_step(actions)
    assert calls == [2]  # one render of both envs for the whole chunk
    assert (after["state"][:, 2] - obs["state"][:, 2] > 0.05).all()


def test_success_ends_the_episode_with_reward_one(env, monkeypatch):
    env.reset(reset_state_ids=torch.tensor([0, 0]))
    sim = env.sims[1]
    evaluate = sim.evaluate
    monkeypatch.setattr(sim, "evaluate", lambda: {**evaluate(), "success": torch.tensor([True])})
    check_success_rewards_once(env, ACTION_DIM)


def test_episodes_are_truncated_at_the_step_limit(env):
    check_truncation_at_the_step_limit(env, ACTION_DIM)


def test_a_checkpointed_env_state_continues_the_episodes(env):
    """get_state / set_state (what env-worker checkpoints hold) continue every episode: same rewards and
    endings, states within float32 round-off of PhysX (about 2e-6 m here, not bit-exact as Meta-World)."""
    import pickle

    g = torch.Generator().manual_seed(0)
    actions = [torch.rand(2, 4, ACTION_DIM, generator=g) * 2 - 1 for _ in range(6)]
    env.reset(reset_state_ids=torch.tensor([1, 2]))
    for a in actions[:2]:
        env.chunk_step(a)
    saved = pickle.loads(pickle.dumps(env.get_state()))
    first = [env.chunk_step(a) for a in actions[2:]]
    env.reset(reset_state_ids=torch.tensor([5, 6]))  # elsewhere, then back
    env.set_state(saved)
    again = [env.chunk_step(a) for a in actions[2:]]
    for (obs1, r1, te1, tr1, _), (obs2, r2, te2, tr2, _) in zip(first, again, strict=True):
        assert torch.allclose(obs1["state"], obs2["state"], atol=1e-4)
        assert torch.equal(r1, r2) and torch.equal(te1, te2) and torch.equal(tr1, tr2)


def test_dense_rewards_are_maniskills_normalised_shaping():
    e = make_env(_cfg(tasks=["PickCube-v1"], reward_signal="dense", use_images=False), 1, seed=0)
    try:
        e.reset(reset_state_ids=torch.tensor([0]))
        _, rewards, _, _, _ = e.chunk_step(torch.zeros(1, 4, ACTION_DIM))
        assert ((rewards > 0) & (rewards < 1)).all()  # reaching reward: the TCP is near, not at, the cube
    finally:
        e.close()


def test_axis_angle_matches_the_rotation():
    from scipy.spatial.transform import Rotation

    rotvec = np.array([[0.3, -1.2, 0.5], [0.0, 0.0, 0.0], [2.5, 0.4, -1.0]])
    xyzw = Rotation.from_rotvec(rotvec).as_quat()
    wxyz = torch.tensor(xyzw[:, [3, 0, 1, 2]], dtype=torch.float64)
    assert torch.allclose(axis_angle(wxyz), torch.tensor(rotvec), atol=1e-6)
    assert torch.allclose(axis_angle(-wxyz), torch.tensor(rotvec), atol=1e-6)  # q and -q: one rotation


@pytest.mark.parametrize("task", list(TASKS))
def test_the_scripted_expert_succeeds(task):
    """Each cube expert on two layouts, no images (it needs 15-46 of the 50 steps)."""
    e = make_env(_cfg(tasks=[task], use_images=False, auto_reset=False, num_action_chunks=1), 2, seed=0)
    try:
        e.reset(reset_state_ids=torch.tensor([3, 4]))
        experts = [ManiSkillCubePolicy(task) for _ in range(2)]
        succeeded = np.zeros(2, dtype=bool)
        for _ in range(50):
            a = np.stack([x.get_action(e.privileged_obs(i)) for i, x in enumerate(experts)])
            _, _, terminated, truncated, _ = e.chunk_step(torch.as_tensor(a, dtype=torch.float32)[:, None])
            succeeded |= terminated.numpy()
            if (terminated | truncated).all():
                break
        assert succeeded.all()
    finally:
        e.close()


def test_collecting_expert_episodes(tmp_path):
    from toolkits.collect_episodes import main
    from toolkits.episodes import EpisodeDataset

    out = tmp_path / "eps"
    argv = ["--suite", "maniskill", "--tasks", "PushCube-v1", "--episodes-per-task", "1", "--num-envs", "1",
            "--image-size", "16", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    ep = EpisodeDataset(str(out))[0]
    assert ep.meta["success_once"] and ep.success[-1] and ep.length < 50  # success ends the episode
    assert ep.images.shape == (ep.length + 1, 1, 16, 16, 3) and ep.state.shape == (ep.length + 1, 8)
    assert ep.actions.shape == (ep.length, 7) and ep.meta["prompt"] == TASKS["PushCube-v1"][0]


def test_the_maniskill_job_config_validates_and_bad_keys_are_named(monkeypatch):
    cfg = load_config("ppo_pi0_maniskill", [])
    assert cfg.env.train.env_type == "maniskill" and cfg.env.eval.sim_backend == "cpu"
    bad = {
        "env.train.tasks=[PickCube-v2]": "did you mean 'PickCube-v1'",
        "env.train.cameras=[hand_camera]": "allowed: base_camera",
        "env.train.state_type=full": "ManiSkill gives proprio",
    }
    if not torch.cuda.is_available():
        bad["env.train.sim_backend=gpu"] = "needs CUDA"
    for override, fragment in bad.items():
        with pytest.raises(ConfigError, match=fragment):
            load_config("ppo_pi0_maniskill", [override])
    monkeypatch.setattr(maniskill_tasks, "vulkan_icd", lambda: None)
    with pytest.raises(ConfigError, match="needs a Vulkan driver.*make install-maniskill"):
        load_config("ppo_pi0_maniskill", [])


def test_a_maniskill_job_trains_and_evaluates(tmp_path):
    """The shipped ManiSkill job as a user runs it, shrunk: one task, one env each for training and evaluation."""
    from tests.runtime.jobs import run_and_read

    rows = run_and_read("ppo_pi0_maniskill", tmp_path, "maniskill", [
        "env.train.tasks=[PickCube-v1]", "env.eval.tasks=[PickCube-v1]", "env.train.num_envs=1", "env.eval.num_envs=1",
        "env.eval_episodes=1", "env.eval.max_episode_steps=8", "env.train.image_size=32", "env.eval.image_size=32",
        "algorithm.n_chunk_steps=2", "actor.global_batch_size=2", "actor.micro_batch_size=2",
        "runner.max_steps=1", "runner.val_check_interval=1", "runner.save_interval=-1", "runner.progress_bar=false",
    ])  # fmt: skip
    assert [r["step"] for r in rows] == [1]
    assert "train/actor/ratio" in rows[0] and rows[0]["time/generate_rollouts"] > 0
    assert rows[0]["eval/episode_steps"] == 8 and "eval/success_once" in rows[0]  # truncated at the limit
    assert list((tmp_path / "maniskill" / "videos" / "eval").glob("*.mp4"))


class _Pose:
    def __init__(self, p: torch.Tensor):
        self.p, self.q = p, torch.tensor([[0.0, 1.0, 0.0, 0.0]]).repeat(len(p), 1)


class _BatchSim:
    """A stand-in for one GPU-simulated ManiSkill env of ``num_envs`` scenes: the TCP moves by the actions,
    a reset puts it at (seed, slot, 0), success is reaching z > 0.25, and its camera shows the TCP's x."""

    def __init__(self, num_envs: int):
        self.num_envs, self.device, self.steps = num_envs, torch.device("cpu"), []
        self.tcp = torch.zeros(num_envs, 3)
        self._episode_seed = np.zeros(num_envs, dtype=np.int64)
        qpos = torch.full((num_envs, 9), 0.04)
        robot = type("Robot", (), {"get_qpos": lambda _: qpos})()
        self.agent = type("Agent", (), {"robot": robot})()
        type(self.agent).tcp = property(lambda _: type("Link", (), {"pose": _Pose(self.tcp)})())
        self.cube = type("Actor", (), {"pose": _Pose(self.tcp + 1.0)})()
        camera = type(
            "Camera", (), {"capture": lambda _: None, "get_obs": lambda _, **kw: {"rgb": self._frame()}}
        )()
        self.scene = type(
            "Scene", (), {"sensors": {"base_camera": camera}, "update_render": lambda *a, **k: None}
        )()

    def _frame(self) -> torch.Tensor:
        return (self.tcp[:, 0] * 10).to(torch.uint8)[:, None, None, None].expand(-1, 8, 8, 3).clone()

    def reset(self, seed, options):
        slots = options["env_idx"]
        self._episode_seed = np.asarray(seed)
        self.tcp[slots] = torch.stack(
            [torch.tensor(seed, dtype=torch.float32)[slots], slots.float(), torch.zeros(len(slots))], 1
        )

    def step(self, action):
        self.steps.append(action.clone())
        self.tcp += action[:, :3] * 0.1
        return None, torch.zeros(self.num_envs), None, None, {"success": self.tcp[:, 2] > 0.25}

    def close(self):
        pass


def test_the_gpu_simulation_path_batches_each_task(monkeypatch):
    """sim_backend gpu on stand-in batches (no CUDA here): one ManiSkill env per task holding that task's envs,
    partial resets of the envs that ended, steps with every scene of a batch (those done hold still), frames
    and state read back into the right env."""
    import gymnasium as gym

    from policy_and_value.envs import maniskill_env

    made = {}
    monkeypatch.setattr(maniskill_env, "missing_requirement", lambda: None)
    monkeypatch.setattr(
        gym,
        "make",
        lambda task, num_envs, **kw: made.setdefault(
            task, type("W", (), {"unwrapped": _BatchSim(num_envs)})()
        ),
    )
    cfg = _cfg(
        tasks=["PickCube-v1", "PushCube-v1"], sim_backend="gpu", image_size=8, layout_seed=0, auto_reset=True
    )
    e = maniskill_env.ManiSkillEnv(cfg, 4, seed=0)
    pick, push = made["PickCube-v1"].unwrapped, made["PushCube-v1"].unwrapped
    assert e.task_ids.tolist() == [0, 1, 0, 1] and pick.num_envs == push.num_envs == 2
    obs, _ = e.reset(reset_state_ids=torch.tensor([1, 2, 3, 4]))
    assert obs["state"][:, 0].tolist() == [1.0, 2.0, 3.0, 4.0] and obs["state"][:, 1].tolist() == [0, 0, 1, 1]
    assert obs["images"][:, 0, 0, 0, 0].tolist() == [10, 20, 30, 40]  # each env its own scene's frame
    actions = torch.zeros(4, 2, ACTION_DIM)
    actions[2, :, 2] = 1.0  # env 2 (PickCube's second scene) rises 10 cm a step: success after 3 steps
    actions[:, :, 6] = -1.0
    e.cfg = e.cfg.model_copy(update={"num_action_chunks": 2})
    _, rewards, terminated, _, info = e.chunk_step(actions)
    assert terminated.tolist() == [False, False, False, False] and len(pick.steps) == 2
    _, rewards, terminated, _, info = e.chunk_step(actions)
    assert terminated.tolist() == [False, False, True, False] and rewards[2].tolist() == [1.0, 0.0]
    assert pick.steps[-1][1, 2] == 0 and pick.steps[-1][1, 6] == -1  # done after one step: holds, grip kept
    assert info["episode"]["env_ids"].tolist() == [2]
    # auto reset of env 2 alone: PickCube's slot 1 gets a new seeded layout, slot 0 keeps its own
    assert pick.tcp[0, 0] == 1.0 and pick.tcp[1, 2] == 0.0 and 0 <= pick.tcp[1, 0] < 1000


def test_offline_evaluate_runs_in_maniskill(tmp_path, capsys):
    """A policy sized for ManiSkill (7 actions, 8-number state, one camera) evaluated with the CLI."""
    from policy_and_value.config.schema import ModelConfig
    from policy_and_value.envs.base import EnvSpec
    from policy_and_value.models.pi0 import save_pretrained
    from policy_and_value.models.registry import make_policy
    from policy_and_value.offline.evaluate import main

    spec = EnvSpec(ACTION_DIM, 4, STATE_DIM, (1, 16, 16), ("PushCube-v1",), None, (-1.0,) * 7, (1.0,) * 7)
    model = ModelConfig(policy_type="pi0", add_value_head=False, num_action_chunks=4)
    policy_dir = save_pretrained(make_policy(model, spec), tmp_path / "policy")
    argv = ["--model-dir", str(policy_dir), "--suite", "maniskill", "--tasks", "PushCube-v1", "--episodes", "1",
            "--image-size", "16", "--max-episode-steps", "8"]  # fmt: skip
    assert main(argv) == 0
    assert "| PushCube-v1 | 1 | 0% |" in capsys.readouterr().out  # an untrained policy, 8 steps: no success


def test_offline_evaluate_names_a_missing_simulator(monkeypatch, capsys):
    """--suite maniskill where ManiSkill is not installed: one config error line naming the install step,
    before any policy is loaded, not an ImportError traceback."""
    from policy_and_value.offline.evaluate import main

    monkeypatch.setattr(
        maniskill_tasks, "missing_requirement", lambda: "ManiSkill is not installed: make maniskill"
    )
    assert main(["--model-dir", "nowhere", "--suite", "maniskill"]) == 2
    err = capsys.readouterr().err
    assert err == "config error: --suite='maniskill': ManiSkill is not installed: make maniskill\n"
