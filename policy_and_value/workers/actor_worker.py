"""Actor worker: one data-parallel rank that computes advantages and runs the PPO/GRPO update.

Ranks form a torch.distributed group (gloo on CPU, nccl on GPU); gradients are averaged with DDP and
advantage statistics over the whole batch of all ranks. Checkpoints are torch.distributed.checkpoint
(DCP) directories written by all ranks together.
"""

from __future__ import annotations

import socket
import time
from contextlib import nullcontext
from typing import Any

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch import nn
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_state_dict,
    set_model_state_dict,
    set_state_dict,
)
from torch.nn.parallel import DistributedDataParallel as DDP

from policy_and_value.algorithms import (
    build_optimizer,
    explained_variance,
    masked_mean,
    ppo_policy_loss,
    scheduled_optimizer_steps,
    split_value_head,
    value_loss,
)
from policy_and_value.algorithms.credit import assign_credit
from policy_and_value.algorithms.imitation import imitation_batch, selected_chunks
from policy_and_value.config.env_checks import env_groups
from policy_and_value.config.schema import JobConfig
from policy_and_value.envs.base import EnvSpec
from policy_and_value.offline.anchor import OfflineAnchor
from policy_and_value.offline.replay import ImitationReplay
from policy_and_value.workers.base import Worker
from policy_and_value.workers.trajectory import cat_shards, flatten_time, take
from toolkits.base.checkpoint import optimizer_shard_file
from toolkits.base.lr_schedule import build_scheduler


class _Evaluate(nn.Module):
    """Makes the losses' policy calls the forward pass so DDP can hook gradient all-reduce onto it."""

    def __init__(self, policy: nn.Module):
        super().__init__()
        self.policy = policy

    def forward(
        self,
        batch: dict[str, Any],
        imitation: dict[str, Any] | None = None,
        offline: dict[str, Any] | None = None,
        replay: dict[str, Any] | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """RL: (log-prob, value, entropy) of the recorded chunks. IL: (flow-matching loss on the
        ``imitation`` batch, value of the recorded observation, zero entropy). Both then add the
        flow-matching losses on the ``offline`` and ``replay`` batches (None without one)."""
        if imitation is None:
            out = self.policy.evaluate(batch)
        else:
            loss = self.policy.flow_matching_loss(imitation)
            no_entropy = torch.zeros(imitation["actions"].shape[0], device=loss.device)
            out = (loss, self.policy.critic(batch), no_entropy)
        offline_loss = None if offline is None else self.policy.flow_matching_loss(offline)
        replay_loss = None if replay is None else self.policy.flow_matching_loss(replay)
        return (*out, offline_loss, replay_loss)


class ActorWorker(Worker):
    """Trains the policy on trajectory shards; the source of the rollout workers' weights."""

    component = "actor"

    def __init__(self, rank: int, world_size: int, num_cpus: float, cfg: JobConfig, spec: EnvSpec):
        super().__init__(rank, world_size, num_cpus, cfg.runner.seed)
        self.cfg = cfg
        algo = cfg.algorithm
        self.policy = self.build_policy(cfg, spec)  # identical initial weights on every rank and the rollout
        # a sharded optimiser is built once the process group exists (init_process_group)
        self.shard_optimizer = cfg.actor.shard_optimizer and world_size > 1
        if not self.shard_optimizer:
            self._build_optimizer()
        self.shuffle_gen = torch.Generator().manual_seed(cfg.runner.seed + 777)
        self.offline: OfflineAnchor | None = None
        if algo.offline_data_coef > 0 and algo.offline_data_path is not None:
            env = cfg.env.train
            self.offline = OfflineAnchor(
                algo.offline_data_path, env.tasks, self.policy.num_action_chunks, env.state_type,
                env.cameras, seed=cfg.runner.seed + 888 + rank,
            )  # fmt: skip
        self.replay: ImitationReplay | None = None
        if algo.imitation_replay_size > 0:
            self.replay = ImitationReplay(algo.imitation_replay_size, seed=cfg.runner.seed + 999 + rank)
        # a mixed env's groups (names, and each one's loss_weight; None when every group weighs 1)
        groups = env_groups(cfg.env.train)
        self.env_group_names = [name for name, _ in groups]
        weights = torch.tensor([group.loss_weight for _, group in groups])
        self.group_weights = None if bool((weights == 1.0).all()) else weights
        self.model: nn.Module = _Evaluate(self.policy)
        self.group_ready = False
        self.train_steps = 0  # training steps done (critic warm-up counts them)

    def _build_optimizer(self) -> None:
        cfg = self.cfg
        self.optimizer = build_optimizer(self.policy, cfg.actor.optim, shard=self.shard_optimizer)
        self.scheduler = build_scheduler(self.optimizer, cfg.actor.optim, scheduled_optimizer_steps(cfg))

    @property
    def local_optimizer(self) -> torch.optim.Optimizer:
        """The optimiser holding this rank's state (a sharded one's AdamW over this rank's share)."""
        return self.optimizer.optim if self.shard_optimizer else self.optimizer

    # ------------------------------------------------------------------ distributed set-up
    def master_address(self) -> tuple[str, int]:
        """This node's address and a free port, for rank 0 to host the process group store."""
        import ray

        host = ray.util.get_node_ip_address()  # reachable from the other nodes, not only this machine
        with socket.socket() as s:
            s.bind(("", 0))
            port = s.getsockname()[1]
        return host, port

    def init_process_group(self, host: str, port: int) -> None:
        """Join the actor group (also when world_size == 1, so DCP and collectives work the same)."""
        backend = self.cfg.actor.backend
        if backend == "auto":
            backend = "nccl" if self.device.type == "cuda" else "gloo"
        dist.init_process_group(
            backend, init_method=f"tcp://{host}:{port}", rank=self.rank, world_size=self.world_size
        )
        if self.world_size > 1:
            self.model = DDP(
                self.model,
                device_ids=[self.device.index] if self.device.type == "cuda" else None,
                # pi0 leaves some weights out of a given loss (e.g. the prefix norm without value_after_vlm)
                find_unused_parameters=getattr(self.policy, "ddp_find_unused_parameters", False),
            )
        if self.shard_optimizer:
            self._build_optimizer()
        self.group_ready = True

    # ------------------------------------------------------------------ weights
    def get_weights(self) -> dict[str, torch.Tensor]:
        """CPU copy of the policy state (parameters and buffers) for the rollout workers."""
        return {k: v.detach().cpu().clone() for k, v in self.policy.state_dict().items()}

    def send_weights(self) -> None:
        """Broadcast the policy state to the rollout ranks over the weight-sync group (rank 0 only)."""
        self.weight_channel.send(list(self.policy.state_dict().values()))

    def offload(self) -> None:
        """Move model and optimiser state to CPU between updates (``actor.enable_offload``)."""
        self.policy.to("cpu")
        _optimizer_to(self.local_optimizer, torch.device("cpu"))

    def onload(self) -> None:
        self.policy.to(self.device)
        _optimizer_to(self.local_optimizer, self.device)

    # ------------------------------------------------------------------ training
    def train(self, *shards: dict[str, Any]) -> dict[str, float]:
        """Advantages, then ``update_epoch`` passes of minibatch updates; returns averaged metrics."""
        with self.busy():
            return self._train(*shards)

    def _train(self, *shards: dict[str, Any]) -> dict[str, float]:
        t0 = time.perf_counter()
        cfg, algo = self.cfg, self.cfg.algorithm
        traj = cat_shards(list(shards))
        group = dist.group.WORLD if self.group_ready else None
        metrics = assign_credit(traj, algo, self.shuffle_gen, group, self.env_group_names, self.cfg.ablation)
        t_adv = time.perf_counter() - t0

        T = traj["actions"].shape[0]
        samples = {
            "obs": flatten_time(traj["obs"], T),
            "replay": flatten_time(traj["replay"], T),
            "logprob": flatten_time(traj["logprob"], T),
            "advantages": flatten_time(traj["advantages"], T),
            "returns": flatten_time(traj["returns"], T),
            "values": flatten_time(traj["values"], T),
            "loss_mask": flatten_time(traj["loss_mask"], T),
        }
        if self.group_weights is not None and traj.get("env_group") is not None:  # groups' loss_weight
            weight = self.group_weights[traj["env_group"]]
            samples["loss_weight"] = flatten_time(traj["loss_mask"] * weight, T)
        if algo.train_mode == "IL":
            samples["actions"] = flatten_time(traj["actions"], T)
        if self.replay is not None:  # this step's selected chunks join the replay before the update
            chosen = selected_chunks(
                samples["advantages"], samples["loss_mask"], algo.imitation_min_advantage
            )
            chosen = chosen.nonzero().squeeze(-1)
            picked = take({"obs": samples["obs"], "actions": samples["actions"]}, chosen)
            self.replay.add(picked["obs"], picked["actions"])
            metrics["train/actor/replay_size"] = float(len(self.replay))
        n = samples["loss_mask"].shape[0]
        per_rank = cfg.actor.global_batch_size // self.world_size
        micro = cfg.actor.micro_batch_size
        self.policy.train()
        critic_only = self.train_steps < algo.critic_warmup_steps
        acc: dict[str, list[float]] = {}
        stopped = False
        for _ in range(algo.update_epoch):
            perm = torch.randperm(n, generator=self.shuffle_gen)
            for start in range(0, n - per_rank + 1, per_rank):
                idx = perm[start : start + per_rank]
                stats = self._minibatch_step(samples, idx, micro, critic_only)
                for k, v in stats.items():
                    acc.setdefault(k, []).append(v)
                stopped = self._kl_exceeded(stats)
                if stopped:
                    break
            if stopped:
                break
        if algo.critic_epochs and algo.adv_type == "gae":
            acc.update(self._fit_critic(samples))
        self.policy.eval()
        # After the update, so this step's recomputed log-probs used the statistics the rollout used.
        if self.cfg.model.obs_norm and hasattr(self.policy, "update_obs_norm"):
            self._update_obs_norm(traj["obs"]["state"], traj["loss_mask"])
        self.train_steps += 1
        out = {k: sum(v) / len(v) for k, v in acc.items()}
        out["train/critic/warmup"] = float(critic_only)
        out["train/actor/kl_early_stop"] = float(stopped)
        out.update(metrics)
        out = self._mean_over_ranks(out)
        out["time/cal_adv_and_returns"] = t_adv
        return out

    def _fit_critic(self, samples: dict[str, Any]) -> dict[str, list[float]]:
        """``algorithm.critic_epochs`` passes of critic-only minibatch steps on the step's returns (the
        policy's parameters get no gradient, so AdamW leaves them alone; the lr schedule does not move)."""
        algo = self.cfg.algorithm
        critic, _ = split_value_head(self.policy)
        n, size = samples["loss_mask"].shape[0], self.cfg.actor.micro_batch_size
        losses, evs = [], []
        for _ in range(algo.critic_epochs):
            perm = torch.randperm(n, generator=self.shuffle_gen)
            for start in range(0, n - size + 1, size):
                mb = {
                    k: _to_device(v, self.device)
                    for k, v in take(samples, perm[start : start + size]).items()
                }
                value = self.policy.critic({"obs": mb["obs"], **mb["replay"]})
                mask = mb["loss_mask"]
                loss, _ = value_loss(
                    value, mb["values"], mb["returns"], mb.get("loss_weight", mask), algo.value_clip,
                    algo.huber_delta,
                )  # fmt: skip
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                if self.world_size > 1:  # the critic's own steps bypass DDP: average its gradients here
                    for p in critic:
                        dist.all_reduce(p.grad)
                        p.grad /= self.world_size
                _clip_or_norm(critic, self.cfg.actor.optim.clip_grad)
                self.optimizer.step()
                losses.append(float(loss.detach()))
                evs.append(float(explained_variance(value.detach(), mb["returns"], mask)))
        self.optimizer.zero_grad(set_to_none=True)
        if not losses:  # fewer chunks than one minibatch
            return {}
        return {"train/critic/fit_value_loss": losses[-1:], "train/critic/fit_explained_variance": evs[-1:]}

    def _kl_exceeded(self, stats: dict[str, float]) -> bool:
        """``algorithm.target_kl``: whether the policy has moved too far from the rollout policy (approx.
        KL of the last minibatch, averaged over ranks so every rank stops at the same minibatch)."""
        target = self.cfg.algorithm.target_kl
        if target is None or "train/actor/approx_kl" not in stats:
            return False
        kl = torch.tensor(stats["train/actor/approx_kl"], dtype=torch.float64)
        if self.world_size > 1:
            dist.all_reduce(kl)
            kl /= self.world_size
        return bool(kl > target)

    def _minibatch_step(
        self, samples: dict[str, Any], idx: torch.Tensor, micro: int, critic_only: bool = False
    ) -> dict[str, float]:
        """One optimizer step on minibatch ``idx`` (``micro``-sized pieces), each with as many offline
        chunks when ``algorithm.offline_data_coef`` > 0; ``critic_only``: the policy loss (offline
        term included) is zeroed (critic warm-up)."""
        algo, optim_cfg = self.cfg.algorithm, self.cfg.actor.optim
        chunks = list(idx.split(micro))
        stats: dict[str, float] = {}
        for i, mb_idx in enumerate(chunks):
            mb = take(samples, mb_idx)
            mb = {k: _to_device(v, self.device) for k, v in mb.items()}
            sync = i == len(chunks) - 1
            ctx = self.model.no_sync() if (isinstance(self.model, DDP) and not sync) else nullcontext()
            with ctx:
                mask = mb["loss_mask"]
                weight = mb.get("loss_weight", mask)  # the mask, or each chunk's group loss_weight
                offline = self.offline.sample(len(mb_idx), self.policy) if self.offline is not None else None
                replayed = (
                    self.replay.sample(len(mb_idx)) if self.replay is not None and len(self.replay) else None
                )
                if algo.train_mode == "IL":
                    imitation = imitation_batch(mb, self.policy, algo, self.shuffle_gen)
                    fm_loss, value, entropy, offline_loss, replay_loss = self.model(
                        {"obs": mb["obs"], **mb["replay"]}, imitation, offline, replayed
                    )
                    loss = fm_loss
                    pg_metrics = {
                        "fm_loss": fm_loss.detach(),
                        "positive_advantage_fraction": masked_mean(
                            (imitation["advantage_bin"] == self.policy.best_advantage_bin).float(), mask
                        ),
                        # share of the valid chunks imitated (< 1 with algorithm.imitation_min_advantage)
                        "imitated_fraction": masked_mean(imitation["action_mask"][:, 0].float(), mask),
                    }
                else:
                    logprob, value, entropy, offline_loss, replay_loss = self.model(
                        {"obs": mb["obs"], **mb["replay"]}, None, offline
                    )
                    loss, pg_metrics = ppo_policy_loss(
                        logprob, mb["logprob"], mb["advantages"], weight,
                        algo.clip_ratio_low, algo.clip_ratio_high, algo.clip_ratio_c,
                    )  # fmt: skip
                if offline_loss is not None:  # the anchor on recorded episodes
                    loss = loss + algo.offline_data_coef * offline_loss
                    pg_metrics["offline_fm_loss"] = offline_loss.detach()
                if replay_loss is not None:  # past steps' selected chunks
                    loss = loss + algo.imitation_replay_coef * replay_loss
                    pg_metrics["replay_fm_loss"] = replay_loss.detach()
                ent = masked_mean(entropy, mask)
                if algo.entropy_bonus > 0:
                    loss = loss - algo.entropy_bonus * ent
                if critic_only:  # keeps the graph (DDP) but gives the policy zero gradients
                    loss = loss * 0.0
                metrics = {f"train/actor/{k}": float(v) for k, v in pg_metrics.items()}
                metrics["train/actor/entropy"] = float(ent.detach())
                if value is not None and algo.adv_type == "gae":
                    v_loss, v_metrics = value_loss(
                        value, mb["values"], mb["returns"], weight, algo.value_clip, algo.huber_delta
                    )
                    loss = loss + algo.value_loss_coef * v_loss
                    metrics.update({f"train/critic/{k}": float(v) for k, v in v_metrics.items()})
                    ev = explained_variance(value.detach(), mb["returns"], mask)
                    metrics["train/critic/explained_variance"] = float(ev)
                (loss / len(chunks)).backward()
            for k, v in metrics.items():
                stats[k] = stats.get(k, 0.0) + v / len(chunks)
        if optim_cfg.clip_critic_apart:
            critic, params = split_value_head(self.policy)
            stats["train/critic/grad_norm"] = float(_clip_or_norm(critic, optim_cfg.clip_grad))
        else:
            params = [p for p in self.policy.parameters() if p.requires_grad]
        grad_norm = _clip_or_norm(params, optim_cfg.clip_grad)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        stats["train/actor/grad_norm"] = float(grad_norm)
        stats["train/actor/lr"] = self.optimizer.param_groups[0]["lr"]
        if len(self.optimizer.param_groups) > 1:
            stats["train/critic/lr"] = self.optimizer.param_groups[-1]["lr"]
        self.scheduler.step()
        return stats

    def _update_obs_norm(self, state: torch.Tensor, mask: torch.Tensor) -> None:
        valid = state[mask.bool()]
        self.policy.update_obs_norm(valid.to(self.device))
        if self.world_size > 1:
            for buf in self.policy.buffers():
                if buf.is_floating_point():
                    dist.all_reduce(buf)
                    buf.div_(self.world_size)

    def _mean_over_ranks(self, metrics: dict[str, float]) -> dict[str, float]:
        if self.world_size == 1 or not metrics:
            return metrics
        keys = sorted(metrics)
        t = torch.tensor([metrics[k] for k in keys], dtype=torch.float64)
        dist.all_reduce(t)
        return {k: float(v) / self.world_size for k, v in zip(keys, t.tolist(), strict=True)}

    # ------------------------------------------------------------------ checkpoint
    def _state(self) -> dict[str, Any]:
        if self.shard_optimizer:  # the optimiser's shards go to one file per rank (optimizer_shard_file)
            return {"model": get_model_state_dict(self.policy), "scheduler": self.scheduler.state_dict()}
        model_sd, optim_sd = get_state_dict(self.policy, self.optimizer)
        return {"model": model_sd, "optim": optim_sd, "scheduler": self.scheduler.state_dict()}

    def save_checkpoint(self, path: str) -> dict[str, Any]:
        """All ranks write the DCP directory together (and, sharded, each its optimiser shard); returns
        this rank's RNG and shuffle state."""
        dcp.save(self._state(), checkpoint_id=path)
        if self.shard_optimizer:
            torch.save(
                self.local_optimizer.state_dict(), optimizer_shard_file(path, self.rank, self.world_size)
            )
        return {
            "rng": self.get_rng_state(),
            "shuffle": self.shuffle_gen.get_state(),
            "offline": self.offline.gen.get_state() if self.offline is not None else None,
            "replay": self.replay.state_dict() if self.replay is not None else None,
            "steps": self.train_steps,
        }

    def load_checkpoint(self, path: str, extra: dict[str, Any]) -> None:
        """Restore model, optimiser and scheduler from DCP, and this rank's RNG state. Parameters no
        loss reached (e.g. pi0's last prefix layer) were saved without optimiser state and get none."""
        state = self._state()
        if self.shard_optimizer:
            dcp.load(state, checkpoint_id=path)
            set_model_state_dict(self.policy, state["model"])
            shard = torch.load(optimizer_shard_file(path, self.rank, self.world_size), weights_only=True)
            self.local_optimizer.load_state_dict(shard)
            self._restore_extra(state, extra)
            return
        saved = dcp.FileSystemReader(path).read_metadata().state_dict_metadata
        state["optim"]["state"] = {
            fqn: s for fqn, s in state["optim"]["state"].items() if all(f"optim.state.{fqn}.{k}" in saved for k in s)
        }  # fmt: skip
        dcp.load(state, checkpoint_id=path)
        set_state_dict(
            self.policy, self.optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"],
            options=StateDictOptions(strict=False),  # dcp.load has already required every saved key
        )  # fmt: skip
        self._restore_extra(state, extra)

    def _restore_extra(self, state: dict[str, Any], extra: dict[str, Any]) -> None:
        self.scheduler.load_state_dict(state["scheduler"])
        # a scheduler's state does not set the optimiser's current rates; a sharded optimiser's own groups
        # were not saved, so they take them from the scheduler (unsharded: the same values again)
        for group, lr in zip(self.optimizer.param_groups, self.scheduler.get_last_lr(), strict=True):
            group["lr"] = lr
        self.set_rng_state(extra["rng"])
        self.shuffle_gen.set_state(extra["shuffle"])
        if self.offline is not None and extra.get("offline") is not None:
            self.offline.gen.set_state(extra["offline"])
        if self.replay is not None and extra.get("replay") is not None:
            self.replay.load_state_dict(extra["replay"])
        self.train_steps = extra.get("steps", 0)

    def shutdown(self) -> None:
        if dist.is_initialized():
            dist.destroy_process_group()


def _clip_or_norm(params: list[torch.Tensor], clip: float | None) -> torch.Tensor:
    """The total gradient norm of ``params``, clipped to ``clip`` first when it is set."""
    if clip is not None:
        return torch.nn.utils.clip_grad_norm_(params, clip)
    grads = [p.grad.norm() for p in params if p.grad is not None]
    return torch.linalg.vector_norm(torch.stack(grads)) if grads else torch.zeros(())


def _to_device(x: Any, device: torch.device) -> Any:
    if device.type == "cpu":
        return x
    if isinstance(x, torch.Tensor):
        return x.to(device, non_blocking=True)
    if isinstance(x, dict):
        return {k: _to_device(v, device) for k, v in x.items()}
    return x


def _optimizer_to(optimizer: torch.optim.Optimizer, device: torch.device) -> None:
    for state in optimizer.state.values():
        for k, v in state.items():
            if isinstance(v, torch.Tensor):
                state[k] = v.to(device)
