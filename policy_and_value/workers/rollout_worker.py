"""Rollout worker: runs the policy on env outputs and records trajectories for the actor.

It serves one or more (env rank, stage) streams, each keyed by a string, and keeps a trajectory
buffer per stream. Weights arrive from the actor with ``rollout_ema_decay``.
"""

from __future__ import annotations

from typing import Any

import torch
from safetensors.torch import load_file, save_file

from policy_and_value.config.schema import JobConfig
from policy_and_value.envs.base import EnvSpec
from policy_and_value.runtime.weight_sync import layout_of
from policy_and_value.workers.base import Worker
from policy_and_value.workers.env_worker import EnvOutput
from policy_and_value.workers.trajectory import obs_index, obs_stack, shard_columns
from toolkits.base.seeding import RandomStream
from toolkits.base.tensors import tensors_to


class StreamBuffer:
    """The steps recorded so far for one stream of envs."""

    def __init__(self) -> None:
        self.obs: list[dict] = []
        self.actions: list[torch.Tensor] = []
        self.logprob: list[torch.Tensor] = []
        self.values: list[torch.Tensor] = []
        self.replay: list[dict[str, torch.Tensor]] = []
        self.loss_mask: list[torch.Tensor] = []
        self.env_group: list[torch.Tensor] = []
        self.rewards: list[torch.Tensor] = []
        self.dones: list[torch.Tensor] = []


EVAL_SEED_OFFSET = 40_000  # beside base.COMPONENT_SEED_OFFSET's


class RolloutWorker(Worker):
    """Policy inference for env streams; records (obs, action, logprob, value, reward, done)."""

    component = "rollout"

    def __init__(self, rank: int, world_size: int, num_cpus: float, cfg: JobConfig, spec: EnvSpec):
        super().__init__(rank, world_size, num_cpus, cfg.runner.seed)
        self.cfg = cfg
        algo = cfg.algorithm
        self.chunk_level = algo.reward_type == "chunk_level"
        self.gamma = algo.gamma
        self.policy = self.build_policy(cfg, spec)  # same initial weights as the actor
        self.policy.eval()
        self.synced = False
        self.buffers: dict[str, StreamBuffer] = {}
        self.shards: dict[str, dict[str, Any]] = {}
        # evaluations draw the policy's noise from a stream of their own, restarted by each one: they leave the
        # training samples as they would be without them, and every evaluation draws the same noise
        self.eval_stream = RandomStream(cfg.runner.seed + EVAL_SEED_OFFSET + rank)

    # ------------------------------------------------------------------ weights
    @torch.no_grad()
    def set_weights(self, state_dict: dict[str, torch.Tensor], ema_decay: float) -> None:
        """``w = d * w + (1 - d) * w_actor`` for floating parameters; buffers are copied."""
        own = self.policy.state_dict()
        decay = ema_decay if self.synced else 0.0
        for k, v in state_dict.items():
            target = own[k]
            v = v.to(target.device)
            if decay > 0 and target.is_floating_point() and k in dict(self.policy.named_parameters()):
                target.mul_(decay).add_(v, alpha=1 - decay)
            else:
                target.copy_(v)
        self.synced = True

    def receive_weights(self, ema_decay: float) -> None:
        """``set_weights`` with the state actor rank 0 broadcasts over the weight-sync group."""
        own = self.policy.state_dict()
        received = self.weight_channel.receive(layout_of(list(own.values())))
        self.set_weights(dict(zip(own, received, strict=True)), ema_decay)

    def save_weights(self, path: str) -> None:
        """Write the rollout (EMA) weights as safetensors."""
        save_file({k: v.detach().cpu().contiguous() for k, v in self.policy.state_dict().items()}, path)

    def load_weights(self, path: str) -> None:
        self.policy.load_state_dict(load_file(path))
        self.synced = True

    def offload(self) -> None:
        """Move the policy to CPU (collocated components with ``rollout.enable_offload``)."""
        self.policy.to("cpu")

    def onload(self) -> None:
        self.policy.to(self.device)

    # ------------------------------------------------------------------ rollouts
    @torch.no_grad()
    def predict(self, key: str, env_out: EnvOutput, mode: str = "train") -> torch.Tensor:
        """Actions for one stream; in train mode also records the step."""
        with self.busy():
            return self._predict(key, env_out, mode)

    def begin_eval(self) -> None:
        """An evaluation starts: its draws repeat the last evaluation's."""
        self.eval_stream.restart()

    def _predict(self, key: str, env_out: EnvOutput, mode: str) -> torch.Tensor:
        obs = tensors_to(env_out["obs"], self.device)
        if mode == "eval":
            with self.eval_stream:
                return self.policy.predict(obs, mode=mode).actions.cpu()
        out = self.policy.predict(obs, mode=mode)
        if mode == "train":
            buf = self.buffers.setdefault(key, StreamBuffer())
            if buf.obs:
                self._record_outcome(buf, env_out)
            buf.obs.append(env_out["obs"])
            buf.actions.append(out.actions.cpu())
            buf.logprob.append(out.logprob.cpu())
            if out.value is not None:
                buf.values.append(out.value.cpu())
            buf.replay.append({k: v.cpu() for k, v in out.replay.items()})
            buf.loss_mask.append(env_out["alive"].float())
            if "env_group" in env_out:  # a mixed env: each env's group, for the actor's losses
                buf.env_group.append(env_out["env_group"].long())
        return out.actions.cpu()

    @torch.no_grad()
    def finish(self, key: str, env_out: EnvOutput) -> None:
        """Record the last step's outcome and the bootstrap value; the stream becomes a shard."""
        with self.busy():
            self._finish(key, env_out)

    def _finish(self, key: str, env_out: EnvOutput) -> None:
        buf = self.buffers.pop(key)
        self._record_outcome(buf, env_out)
        shard: dict[str, Any] = {
            "obs": obs_stack(buf.obs),
            "actions": torch.stack(buf.actions),
            "logprob": torch.stack(buf.logprob),
            "rewards": torch.stack(buf.rewards),
            "dones": torch.stack(buf.dones),
            "loss_mask": torch.stack(buf.loss_mask),
            "env_group": torch.stack(buf.env_group) if buf.env_group else None,
            "replay": {k: torch.stack([r[k] for r in buf.replay]) for k in buf.replay[0]},
            "values": None,
        }
        if buf.values:
            last = self.policy.predict(tensors_to(env_out["obs"], self.device), mode="eval").value.cpu()
            shard["values"] = torch.stack(buf.values + [last])
        self.shards[key] = shard

    def _record_outcome(self, buf: StreamBuffer, env_out: EnvOutput) -> None:
        rewards = env_out["rewards"].float()  # [B, C]
        terminated, truncated = env_out["terminated"], env_out["truncated"]
        if self.chunk_level:
            rewards = rewards.sum(-1)
        # Time-limit truncation is not failure: bootstrap with the value of the pre-reset obs.
        boot = truncated & ~terminated
        if buf.values and boot.any() and env_out.get("final_obs") is not None:
            final = obs_index(env_out["final_obs"], boot.nonzero().squeeze(-1))
            v = self.policy.predict(tensors_to(final, self.device), mode="eval").value.cpu()
            rewards = rewards.clone()
            if self.chunk_level:
                rewards[boot] += self.gamma * v
            else:
                rewards[boot, -1] += self.gamma * v[:, 0]
        buf.rewards.append(rewards)
        buf.dones.append((terminated | truncated).float())

    def get_shard(self, key: str, start: int, end: int) -> dict[str, Any]:
        """Columns ``start:end`` of a finished stream, for one actor rank."""
        return shard_columns(self.shards[key], start, end)

    def clear(self, prefix: str = "") -> dict[str, float]:
        """Drop the finished shards whose key starts with ``prefix`` (one step's, when the next step's are
        already being generated); returns their reward statistics."""
        done = [k for k in self.shards if k.startswith(prefix)]
        rewards = [self.shards[k]["rewards"] for k in done]
        stats: dict[str, float] = {}
        if rewards:
            r = torch.cat([x.reshape(-1) for x in rewards])
            stats["rewards"] = float(r.mean())
        for k in done:
            del self.shards[k]
        return stats
