"""Several env groups stepped as one batched env, e.g. imagined (world-model) and real (Meta-World)
envs in one rollout: the runner sees a single env, and every finished episode says which group it
came from (``info["episode"]["group_id"]``, indexing ``MixedEnv.groups``).

Envs ``[0, n_0)`` belong to group 0, the next ``n_1`` to group 1, and so on. Each group's task ids are
mapped into the union of all groups' tasks (in order of first appearance).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from policy_and_value.envs.base import BatchedEnv, Observation


class MixedEnv(BatchedEnv):
    """``groups``: (name, env) pairs whose action chunks, action and state sizes and images agree."""

    def __init__(self, groups: list[tuple[str, BatchedEnv]]):
        if not groups:
            raise ValueError("MixedEnv needs at least one env group")
        self.groups = [name for name, _ in groups]
        self.envs = [env for _, env in groups]
        first = self.envs[0].spec
        for name, env in groups[1:]:
            for key in ("num_action_chunks", "action_dim", "state_dim", "image_shape", "discrete_actions"):
                if getattr(env.spec, key) != getattr(first, key):
                    raise ValueError(
                        f"env group {name!r}: {key}={getattr(env.spec, key)} but group {self.groups[0]!r} "
                        f"has {getattr(first, key)}; mixed groups must agree"
                    )
        self.tasks = list(dict.fromkeys(t for env in self.envs for t in env.spec.tasks))
        self._task_maps = [torch.tensor([self.tasks.index(t) for t in env.spec.tasks]) for env in self.envs]
        sizes = [env.num_envs for env in self.envs]
        self._bounds = [(sum(sizes[:g]), sum(sizes[: g + 1])) for g in range(len(sizes))]
        self.num_envs = sum(sizes)
        self.chunk = first.num_action_chunks
        self.action_dim = first.action_dim
        self.spec = dataclasses.replace(first, tasks=tuple(self.tasks))
        self.group_of_env = torch.cat([torch.full((n,), g, dtype=torch.long) for g, n in enumerate(sizes)])
        self._obs: list[Observation | None] = [None] * len(self.envs)

    def _concat(self, parts: list[Observation]) -> Observation:
        out: Observation = {
            "state": torch.cat([p["state"] for p in parts]),
            "prompt": [x for p in parts for x in p["prompt"]],
            "task_id": torch.cat([m[p["task_id"]] for m, p in zip(self._task_maps, parts)]),
        }
        for key in ("images", "time_left"):
            if all(key in p for p in parts):
                out[key] = torch.cat([p[key] for p in parts])
        return out

    def reset(
        self, env_ids: torch.Tensor | None = None, reset_state_ids: torch.Tensor | None = None
    ) -> tuple[Observation, dict]:
        ids = torch.arange(self.num_envs) if env_ids is None else torch.as_tensor(env_ids).reshape(-1)
        states = None if reset_state_ids is None else torch.as_tensor(reset_state_ids).reshape(-1)
        infos = []
        for g, (env, (lo, hi)) in enumerate(zip(self.envs, self._bounds)):
            mine = (ids >= lo) & (ids < hi)
            if mine.any() or self._obs[g] is None:
                local = ids[mine] - lo if mine.any() else None
                chosen = None if states is None or not mine.any() else states[mine]
                self._obs[g], info = env.reset(local, chosen)
                infos.append(info)
        info: dict[str, Any] = {}
        if infos and all("reset_state_ids" in i for i in infos) and len(infos) == len(self.envs):
            info["reset_state_ids"] = torch.cat([i["reset_state_ids"] for i in infos])
        return self._concat(self._obs), info

    def chunk_step(
        self, actions: torch.Tensor
    ) -> tuple[Observation, torch.Tensor, torch.Tensor, torch.Tensor, dict]:
        rewards, terminated, truncated, finals, episodes = [], [], [], [], []
        any_final = False
        for g, (env, (lo, hi)) in enumerate(zip(self.envs, self._bounds)):
            obs, r, te, tr, info = env.chunk_step(actions[lo:hi])
            self._obs[g] = obs
            rewards.append(r)
            terminated.append(te)
            truncated.append(tr)
            finals.append(info.get("final_obs", obs))
            any_final |= "final_obs" in info
            if "episode" in info:
                ep = dict(info["episode"])
                ep["env_ids"] = torch.as_tensor(ep["env_ids"]) + lo
                ep["group_id"] = torch.full_like(ep["env_ids"], g)
                episodes.append(ep)
        out_info: dict[str, Any] = {}
        if any_final:
            out_info["final_obs"] = self._concat(finals)
        if episodes:
            shared = [k for k in episodes[0] if all(k in e for e in episodes)]  # e.g. "halted": imagined only
            out_info["episode"] = {k: torch.cat([torch.as_tensor(e[k]) for e in episodes]) for k in shared}
        return (
            self._concat(self._obs),
            torch.cat(rewards),
            torch.cat(terminated),
            torch.cat(truncated),
            out_info,
        )

    def get_state(self) -> Any:
        return {"groups": [env.get_state() for env in self.envs], "obs": list(self._obs)}

    def set_state(self, state: Any) -> None:
        for env, s in zip(self.envs, state["groups"]):
            env.set_state(s)
        self._obs = list(state["obs"])

    def offload(self) -> None:
        for env in self.envs:
            env.offload()

    def onload(self) -> None:
        for env in self.envs:
            env.onload()

    def close(self) -> None:
        for env in self.envs:
            env.close()
