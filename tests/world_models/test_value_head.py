"""The state model's value head (``model.value_head``): the episode's outcome discounted to its end, learned from
outcomes alone, and ``reward_mode: value``, the dense imagined reward it makes (its change over each chunk)."""

from __future__ import annotations

import pytest
import torch

from policy_and_value.config import load_config
from policy_and_value.config.env_schema import LearnedRewardConfig
from policy_and_value.envs.base import BatchedEnv
from tests.world_models.conftest import PROMPTS, tiny_dynamics
from tests.world_models.test_env import _actions
from tests.world_models.test_observation_model import OBSERVATION, _observation_env
from tests.world_models.test_state_model import SMALL, rule_episodes  # noqa: F401 - the fixture
from toolkits.base.errors import ConfigError
from toolkits.episodes import EpisodeDataset
from world_models.learned_reward import LearnedRewardEnv
from world_models.state_data import StateWindows
from world_models.state_model import StateModel, StateModelConfig
from world_models.train_state_model import main


def test_the_value_is_the_outcome_discounted_to_the_episode_end(rule_episodes):  # noqa: F811
    data = EpisodeDataset(rule_episodes)
    windows = StateWindows(data, list(range(len(data))), 4, 2, "proprio", success_labels="episode_end",
                           value_discount=0.5)  # fmt: skip
    ends = windows.success.nonzero().flatten()  # the successful episodes' last actions
    assert torch.all(windows.values[ends] == 1.0)
    assert torch.all(windows.values[ends - 1] == 0.5) and torch.all(windows.values[ends - 2] == 0.25)
    failed = [i for i, e in enumerate(data.entries) if not e["success_once"]]
    assert failed  # a failed episode's values are all 0
    first = StateWindows(data, failed[:1], 4, 2, "proprio", success_labels="episode_end")
    assert float(first.values.abs().sum()) == 0.0


@pytest.mark.parametrize("encoder", ["pca", "learned"])
def test_both_designs_train_a_value_head_from_the_cli(rule_episodes, tmp_path, encoder):  # noqa: F811
    dyn = tiny_dynamics().save_pretrained(tmp_path / "dyn")
    args = [f"data.path={rule_episodes}", f"output_dir={tmp_path / 'om'}", "data.holdout_fraction=0.25",
            f"render.dynamics_model_dir={dyn}", "train.steps=2", *SMALL, *OBSERVATION, "model.value_head=true",
            f"model.latent_encoder={encoder}"]  # fmt: skip
    assert main(args) == 0
    model = StateModel.from_pretrained(tmp_path / "om" / "model")
    assert model.cfg.value_head
    states = torch.zeros(3, 2, 7)
    assert model.value_logits(states, model.task_one_hot(sorted(PROMPTS.values())[:1] * 2)).shape == (3, 2)


@pytest.fixture(scope="module")
def value_model_dir(tmp_path_factory) -> str:
    torch.manual_seed(0)
    shape = list(tiny_dynamics().noise_shape()[1:])
    cfg = StateModelConfig(
        state_dim=7, action_dim=4, action_chunk=4, prompts=sorted(PROMPTS.values()), ensemble_size=3, hidden=16,
        layers=2, latent_shape=shape, latent_components=3, value_head=True,
    )  # fmt: skip
    model = StateModel(cfg)
    model.fit_latent_basis(torch.randn(40, *shape))
    return str(model.save_pretrained(tmp_path_factory.mktemp("value_model") / "model"))


def test_reward_mode_value_pays_the_pessimistic_values_change_over_each_chunk(
    episodes, model_dirs, value_model_dir
):
    keys = dict(
        reward_mode="value", chunk_reward=False, success_threshold=1.0, reward_uncertainty_penalty=0.5
    )
    env = _observation_env(episodes, model_dirs, value_model_dir, **keys)
    env.reset()

    def potential() -> torch.Tensor:
        members = torch.from_numpy(env._members)
        values = torch.sigmoid(env.state_model.value_logits(members, env._tasks_one_hot))
        return values.mean(0) - 0.5 * values.std(0, correction=0)

    before = potential()
    assert torch.allclose(torch.from_numpy(env._potential), before, atol=1e-6)
    _, rewards, _, _, _ = env.chunk_step(_actions(2))
    after = potential()
    assert torch.allclose(rewards[:, -1], after - before, atol=1e-5)  # no success: threshold 1
    assert torch.all(rewards[:, :-1] == 0) and not torch.allclose(after, before)


def test_reward_mode_value_needs_a_value_head(episodes, model_dirs, tmp_path):
    dyn, _ = model_dirs
    shape = list(tiny_dynamics().noise_shape()[1:])
    plain = StateModel(
        StateModelConfig(
            state_dim=7,
            action_dim=4,
            action_chunk=4,
            prompts=sorted(PROMPTS.values()),
            latent_shape=shape,
            latent_components=3,
        )  # fmt: skip
    ).save_pretrained(tmp_path / "plain")
    keys = [f"env.train.{k}" for k in ("env_type=world_model", f"dynamics_model_config={dyn}",
            f"dynamics_model_image_root={episodes}", "reward_model_config=null", "outcome_source=state",
            "frames_from=state_residual", "chunk_reward=false", "state_type=proprio", "reward_mode=value",
            f"state_model_config={plain}")]  # fmt: skip
    with pytest.raises(ConfigError, match=r"env.train.reward_mode='value': .* has no value head"):
        load_config("ppo_cnn_metaworld", keys)


class _Frames(BatchedEnv):
    """Two envs of random frames and proprioception, reward 1 on each chunk's last action, never done."""

    def __init__(self):
        self.num_envs, self.chunk, self.action_dim, self.tasks = 2, 4, 4, sorted(PROMPTS.values())
        self._gen = torch.Generator().manual_seed(0)

    def _obs(self) -> dict:
        return {"images": torch.randint(0, 255, (2, 2, 32, 32, 3), generator=self._gen, dtype=torch.uint8),
                "state": torch.randn(2, 4, generator=self._gen), "prompt": self.tasks,
                "task_id": torch.arange(2)}  # fmt: skip

    def reset(self, env_ids=None, reset_state_ids=None):
        self.last = self._obs()
        return self.last, {}

    def chunk_step(self, actions):
        self.last = self._obs()
        rewards = torch.zeros(2, 4)
        rewards[:, -1] = 1.0
        return self.last, rewards, torch.zeros(2, dtype=torch.bool), torch.zeros(2, dtype=torch.bool), {}


def test_a_learned_reward_adds_the_value_change_read_off_the_frames(value_model_dir, model_dirs):
    env = LearnedRewardEnv(_Frames(), LearnedRewardConfig(model=value_model_dir, vae=model_dirs[0],
                                                          uncertainty_penalty=0.5))  # fmt: skip
    obs, _ = env.reset()
    first = env.values(obs)
    _, rewards, _, _, _ = env.chunk_step(torch.zeros(2, 4, 4))
    then = env.values(env.env.last)
    assert torch.allclose(rewards[:, -1], 1.0 + then - first, atol=1e-5) and torch.all(rewards[:, :-1] == 0)
    assert (
        not torch.allclose(then, first) and env.num_envs == 2
    )  # the frames moved the value; the rest is env's
    # the value is the members' mean less 0.5 x their std, as in reward_mode value
    latents = env.vae.encode(obs["images"][:, None])[:, 0]
    states = env.model.observe(obs["state"], latents)[None].expand(3, -1, -1)
    probs = torch.sigmoid(env.model.value_logits(states, env.model.task_one_hot(obs["prompt"])))
    assert torch.allclose(first, probs.mean(0) - 0.5 * probs.std(0, correction=0), atol=1e-5)
    assert env.get_state()["learned_reward_potential"].shape == (2,)


def test_a_learned_reward_needs_an_observation_model_with_a_value_head_on_a_simulator(
    episodes, model_dirs, value_model_dir, tmp_path
):
    dyn, _ = model_dirs
    shape = list(tiny_dynamics().noise_shape()[1:])
    plain = StateModel(
        StateModelConfig(
            state_dim=7,
            action_dim=4,
            action_chunk=4,
            prompts=sorted(PROMPTS.values()),
            latent_shape=shape,
            latent_components=3,
        )  # fmt: skip
    ).save_pretrained(tmp_path / "plain")
    ok = load_config(
        "ppo_cnn_metaworld", [f"env.train.learned_reward={{model: {value_model_dir}, vae: {dyn}}}"]
    )
    assert ok.env.train.learned_reward.coef == 1.0
    with pytest.raises(
        ConfigError, match=r"env.train.learned_reward.model=.* needs an observation model with a value"
    ):
        load_config("ppo_cnn_metaworld", [f"env.train.learned_reward={{model: {plain}, vae: {dyn}}}"])
    with pytest.raises(ConfigError, match=r"env.train.learned_reward.vae='/nowhere': no config.json"):
        load_config(
            "ppo_cnn_metaworld", [f"env.train.learned_reward={{model: {value_model_dir}, vae: /nowhere}}"]
        )
    keys = [f"env.train.{k}" for k in ("env_type=world_model", f"dynamics_model_config={dyn}",
            f"dynamics_model_image_root={episodes}", f"reward_model_config={model_dirs[1]}")]  # fmt: skip
    with pytest.raises(ConfigError, match=r"env.train.learned_reward=.* is for a simulator's env"):
        load_config(
            "ppo_cnn_metaworld", [*keys, f"env.train.learned_reward={{model: {value_model_dir}, vae: {dyn}}}"]
        )


def test_the_value_auc_harness_reads_the_values_the_learned_reward_pays(
    episodes, model_dirs, value_model_dir, capsys
):
    """``experiments.harness.value_auc``: each episode's value at a frame is ``observed_values`` of that frame (what
    ``learned_reward`` pays the change of); the table has a row for all episodes and one a task."""
    from experiments.harness.value_auc import frame_values
    from experiments.harness.value_auc import main as value_auc
    from policy_and_value.envs.metaworld_tasks import select_state
    from world_models.dynamics_model import DynamicsModel
    from world_models.learned_reward import observed_values

    model, vae = (
        StateModel.from_pretrained(value_model_dir),
        DynamicsModel.from_pretrained(model_dirs[0]).eval(),
    )
    data = EpisodeDataset(episodes)
    rows = frame_values(model, vae, data, [0, 2, 10_000])
    ep = data[0]
    obs = {"images": torch.from_numpy(ep.images[2:3]), "state": torch.from_numpy(select_state(ep.state[2:3], "proprio")),
           "prompt": [ep.meta["prompt"]]}  # fmt: skip
    assert rows["values"][0][1] == pytest.approx(float(observed_values(model, vae, obs)[0]), abs=1e-6)
    assert all(v[2] != v[2] for v in rows["values"])  # no episode is 10,000 frames long: NaN
    assert value_auc(["--model", value_model_dir, "--vae", model_dirs[0], "--episodes", episodes]) == 0
    out = capsys.readouterr().out
    assert "| all |" in out and out.count("\n| ") >= 3
    with pytest.raises(SystemExit):
        value_auc(
            ["--model", model_dirs[0], "--vae", model_dirs[0], "--episodes", episodes, "--frames", "-1"]
        )


def test_imagined_outcomes_imagines_from_each_recorded_start(tmp_path, capsys):
    """``experiments.harness.imagined_outcomes`` on the quickstart's observation model and policy: every recorded
    start of a known outcome is imagined ``--samples`` times closed loop; the table has the real and imagined rates."""
    from experiments.harness.imagined_outcomes import main as imagined_outcomes
    from toolkits.episodes import EpisodeWriter

    starts = EpisodeDataset("assets/world_models/observation/starts")
    writer = EpisodeWriter(str(tmp_path / "eps"), info=starts.info)
    picked = [i for i, e in enumerate(starts.entries) if e["task"] == "drawer-open-v3"][:4]
    for k, i in enumerate(picked):  # two recorded successes and two failures
        ep = starts[i]
        ep.meta["success_once"] = k % 2 == 0
        writer.write(ep)
    writer.close({})
    argv = ["--config", "quickstart", "--episodes", str(tmp_path / "eps"), "--samples", "2", "--steps", "8"]
    assert imagined_outcomes(argv) == 0
    out = capsys.readouterr().out
    assert "drawer-open-v3: 4 starts x 2 imagined" in out
    row = next(line for line in out.splitlines() if line.startswith("| all |"))
    assert row.split(" | ")[1:3] == ["4", "50.0%"]  # starts, the recorded success rate
    cells = row.strip("| ").split(" | ")
    assert len(cells) == 10  # closed loop, recorded actions replayed, the heads on the real frames
    assert all(0.0 <= float(c.rstrip("%")) <= 100.0 for c in cells[2:] if c != "n/a")
    with pytest.raises(SystemExit):
        imagined_outcomes(["--config", "ppo_pi0_metaworld", "--episodes", str(tmp_path / "eps")])
