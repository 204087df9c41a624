"""A dense reward from what a robot records, on a simulator's env (``env.train.learned_reward``): an observation
model's value head (the chance of success from a state, learned from episodes' outcomes alone) read off the observed
frames and proprioception, its change over each chunk added to the chunk's last reward.

This is the reward a robot can have without a simulator's shaping, as RISE scores a real robot's frames with a value
model, and the real-world twin of ``reward_mode: value`` in the world-model env: a recipe trained on it in Meta-World
and in imagination differs only in where the frames come from. The value is the members' mean less
``uncertainty_penalty`` x their std; it is a potential (its changes over an episode sum to its last value less its
first), so the success the env pays keeps deciding what is best.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from policy_and_value.config.env_schema import LearnedRewardConfig
from policy_and_value.envs.base import BatchedEnv, Observation


@torch.no_grad()
def observed_values(model: Any, vae: Any, obs: Observation, uncertainty_penalty: float = 0.0) -> torch.Tensor:
    """An observation model's value [N] of observations (their frames encoded by ``vae``, their proprioception and
    prompts): the members' mean chance of success less ``uncertainty_penalty`` x their std."""
    latents = vae.encode(obs["images"][:, None].to(model.device))[:, 0]
    states = model.observe(obs["state"].float().to(model.device), latents)
    members = states[None].expand(model.cfg.ensemble_size, -1, -1)
    probs = torch.sigmoid(model.value_logits(members, model.task_one_hot(obs["prompt"])))
    return (probs.mean(0) - uncertainty_penalty * probs.std(0, correction=0)).cpu()


class LearnedRewardEnv(BatchedEnv):
    """``env`` with ``cfg``'s value shaping on its rewards; every other attribute is ``env``'s."""

    def __init__(self, env: BatchedEnv, cfg: LearnedRewardConfig):
        from world_models.dynamics_model import DynamicsModel
        from world_models.state_model import StateModel

        self.env = env
        self.cfg = cfg
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = StateModel.from_pretrained(cfg.model, device=self.device)
        self.vae = DynamicsModel.from_pretrained(cfg.vae).eval().to(self.device)
        self._potential = np.zeros(env.num_envs, np.float32)

    def __getattr__(self, name: str) -> Any:
        if name == "env":  # not set yet (while unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.env, name)

    def values(self, obs: Observation) -> torch.Tensor:
        """The pessimistic value [N] of observations: their frames encoded, their proprioception, their prompts."""
        return observed_values(self.model, self.vae, obs, self.cfg.uncertainty_penalty)

    def reset(
        self, env_ids: torch.Tensor | None = None, reset_state_ids: torch.Tensor | None = None
    ) -> tuple[Observation, dict]:
        obs, info = self.env.reset(env_ids=env_ids, reset_state_ids=reset_state_ids)
        ids = np.arange(self.env.num_envs) if env_ids is None else np.asarray(env_ids).reshape(-1)
        self._potential[ids] = self.values(obs).numpy()[ids]
        return obs, info

    def chunk_step(self, actions: torch.Tensor):
        obs, rewards, terminated, truncated, info = self.env.chunk_step(actions)
        now = self.values(obs)
        end = now.clone()
        if "final_obs" in info:  # the envs that ended and were reset: their value where they ended
            done = (terminated | truncated).bool()
            end[done] = self.values(info["final_obs"])[done]
        rewards = rewards.clone()
        rewards[:, -1] += self.cfg.coef * (end - torch.from_numpy(self._potential))
        self._potential = now.numpy().astype(np.float32)
        return obs, rewards, terminated, truncated, info

    def get_state(self) -> dict[str, Any]:
        return {"env": self.env.get_state(), "learned_reward_potential": self._potential.copy()}

    def set_state(self, state: dict[str, Any]) -> None:
        self.env.set_state(state["env"])
        self._potential = state["learned_reward_potential"].copy()

    def close(self) -> None:
        self.env.close()


def with_learned_reward(env: BatchedEnv, cfg) -> BatchedEnv:
    """``env`` wrapped in its config's ``learned_reward`` (a camera env config's key), or ``env`` itself."""
    learned = getattr(cfg, "learned_reward", None)
    return env if learned is None else LearnedRewardEnv(env, learned)
