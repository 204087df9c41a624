"""The training loop: sync weights, generate rollouts, advantages, actor update, eval, checkpoint.

The driver only submits Ray calls and passes ObjectRefs between workers: observations go from env
workers to rollout workers and action chunks back without passing through the driver, and trajectory
shards go from rollout workers straight to the actor ranks that train on them.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass
from typing import Any

import ray
import yaml

from policy_and_value.config.schema import JobConfig
from policy_and_value.runner.failure import record_failure
from policy_and_value.runner.report import (
    TRAIN_SUMMARY_STEPS,
    eval_summary,
    interval_union,
    output_paths,
    progress_postfix,
    train_summary,
)
from policy_and_value.runner.stop import JobStopped, StopRequest, reclaim_sigterm, stop_on_sigterm
from policy_and_value.runtime.cluster import Cluster
from policy_and_value.runtime.placement import parse_placement
from policy_and_value.runtime.worker_group import Pending, WorkerGroup
from policy_and_value.workers.env_worker import merge_stats, prediction_video_dir
from toolkits.base import checkpoint as ckpt
from toolkits.base.metric_logger import MetricLogger
from toolkits.base.seeding import get_rng_state, seed_everything, set_rng_state


@dataclass(frozen=True)
class Stream:
    """One stage of one env rank, served by one rollout rank."""

    env_rank: int
    stage: int
    rollout_rank: int
    num_envs: int


class EmbodiedRunner:
    """Owns the worker groups and runs ``runner.max_steps`` training steps."""

    def __init__(self, cfg: JobConfig):
        self.cfg = cfg
        self.log_dir = ckpt.log_dir_of(cfg)
        os.makedirs(self.log_dir, exist_ok=True)
        self.global_step = 0
        self.cluster: Cluster | None = None
        self.groups: list[WorkerGroup] = []
        self.last_eval: dict[str, float] = {}
        self.first_eval: dict[str, float] = {}
        self.recent_train: list[dict[str, float]] = []  # the last steps' training metrics, for the summary
        self.generation = 0  # rollout generations so far (their shards are keyed by it)
        self.pending: list[tuple[str, Stream]] | None = (
            None  # overlap: next step's rollouts, generated already
        )
        self.saved: list[str] = []
        # whether the rollout holds the actor's latest update (blended once by sync_weights): evaluation and
        # checkpoints need it, and the next step then generates without syncing again
        self.rollout_current = False
        self.stop = StopRequest()  # run_job's SIGTERM handler sets it: stop with a checkpoint

    # ------------------------------------------------------------------ set-up
    def setup(self) -> None:
        """Start Ray, place the workers, join the actor process group, restore a checkpoint."""
        from policy_and_value.workers.actor_worker import ActorWorker
        from policy_and_value.workers.env_worker import EnvWorker
        from policy_and_value.workers.rollout_worker import RolloutWorker

        cfg = self.cfg
        seed_everything(cfg.runner.seed)
        with open(os.path.join(self.log_dir, "config.yaml"), "w") as f:
            yaml.safe_dump(cfg.model_dump(mode="json"), f, sort_keys=False)
        self.cluster = Cluster.start(cfg.cluster)
        reclaim_sigterm()  # ray.init's handler exits at once; a SIGTERM from here on stops with a checkpoint
        placement = parse_placement(
            cfg.cluster.component_placement, cfg.cluster.num_nodes, self.cluster.devices_per_node
        )
        self.placement = placement
        self.env = WorkerGroup(EnvWorker, "env", placement, self.cluster, cfg=cfg, log_dir=self.log_dir)
        self.groups.append(self.env)
        # Start-up overlaps: the model workers import while the env worker builds its envs (they wait for
        # its spec only to build the policy), and the eval envs are built while the models load.
        spec = self.env.workers[0].spec.remote()
        if cfg.env.eval is not None and cfg.runner.val_check_interval > 0:
            self.env.call("prepare_eval")
        pending = Pending(spec)
        self.rollout = WorkerGroup(RolloutWorker, "rollout", placement, self.cluster, cfg=cfg, spec=pending)
        self.actor = WorkerGroup(ActorWorker, "actor", placement, self.cluster, cfg=cfg, spec=pending)
        self.groups += [self.rollout, self.actor]
        self.spec = ray.get(spec)
        host, port = ray.get(self.actor.workers[0].master_address.remote())
        ray.get(self.actor.call("init_process_group", host, port))
        if cfg.rollout.weight_sync == "collective":
            host, port = ray.get(self.actor.workers[0].master_address.remote())
            size = 1 + self.rollout.world_size
            ray.get([
                self.actor.workers[0].init_weight_sync.remote(host, port, 0, size),
                *self.rollout.call_each("init_weight_sync", [(host, port, 1 + r, size) for r in range(size - 1)]),
            ])  # fmt: skip
        self.write_placement()

        S = cfg.rollout.pipeline_stage_num
        per_stage = cfg.env.train.num_envs // self.env.world_size // S
        self.streams = [
            Stream(e, s, (e * S + s) % self.rollout.world_size, per_stage)
            for e in range(self.env.world_size)
            for s in range(S)
        ]
        self.metrics = MetricLogger(
            self.log_dir,
            cfg.runner.logger.logger_backends,
            cfg.runner.logger.project_name,
            cfg.runner.logger.experiment_name,
            cfg.model_dump(mode="json"),
            mode=cfg.runner.logger.mode,
        )
        if cfg.runner.resume_dir:
            self.load_checkpoint(cfg.runner.resume_dir)

    # ------------------------------------------------------------------ one training step
    def sync_weights(self) -> None:
        """Actor rank 0 -> every rollout rank, blended with ``rollout_ema_decay``."""
        decay = self.cfg.rollout.rollout_ema_decay
        if self.cfg.rollout.weight_sync == "collective":
            ray.get(
                [self.actor.workers[0].send_weights.remote(), *self.rollout.call("receive_weights", decay)]
            )
        else:
            weights = self.actor.workers[0].get_weights.remote()
            ray.get(self.rollout.call("set_weights", weights, decay))
        self.rollout_current = True

    def ensure_rollout_current(self) -> None:
        """Sync unless the rollout already holds the latest update, so every update is blended once."""
        if not self.rollout_current:
            self.sync_weights()

    def generate_rollouts(self) -> list[tuple[str, Stream]]:
        """Run ``rollout_epoch`` x ``n_chunk_steps`` chunks on every stream; returns the recorded keys
        (``g<generation>/r<epoch>e<env rank>s<stage>``)."""
        S = self.cfg.rollout.pipeline_stage_num
        keys: list[tuple[str, Stream]] = []
        gen = f"g{self.generation}/"
        self.generation += 1
        if self.cfg.rollout.enable_offload:
            ray.get(self.rollout.call("onload"))
        if self.cfg.env.enable_offload:
            ray.get(self.env.call("onload"))
        for epoch in range(self.cfg.algorithm.rollout_epoch):
            outs: dict[tuple[int, int], Any] = {}
            for e, worker in enumerate(self.env.workers):
                refs = worker.start_rollout.options(num_returns=S).remote()
                refs = refs if S > 1 else [refs]
                for s in range(S):
                    outs[(e, s)] = refs[s]
            for _ in range(self.cfg.algorithm.n_chunk_steps):
                for st in self.streams:
                    key = f"{gen}r{epoch}e{st.env_rank}s{st.stage}"
                    actions = self.rollout.workers[st.rollout_rank].predict.remote(
                        key, outs[(st.env_rank, st.stage)]
                    )
                    outs[(st.env_rank, st.stage)] = self.env.workers[st.env_rank].step.remote(
                        st.stage, actions
                    )
            done = []
            for st in self.streams:
                key = f"{gen}r{epoch}e{st.env_rank}s{st.stage}"
                done.append(
                    self.rollout.workers[st.rollout_rank].finish.remote(key, outs[(st.env_rank, st.stage)])
                )
                keys.append((key, st))
            ray.get(done)
        if self.cfg.rollout.enable_offload:
            ray.get(self.rollout.call("offload"))
        if self.cfg.env.enable_offload:
            ray.get(self.env.call("offload"))
        return keys

    def shard_assignment(self, keys: list[tuple[str, Stream]]) -> list[list[tuple[str, int, int, int]]]:
        """Split the env columns of all streams evenly over actor ranks: (key, rollout rank, start, end)."""
        total = sum(st.num_envs for _, st in keys)
        ranks = self.actor.world_size
        per_rank = total // ranks
        plan: list[list[tuple[str, int, int, int]]] = [[] for _ in range(ranks)]
        col = 0
        for key, st in keys:
            start = 0
            while start < st.num_envs:
                rank = col // per_rank
                take = min(st.num_envs - start, per_rank - col % per_rank)
                plan[rank].append((key, st.rollout_rank, start, start + take))
                start += take
                col += take
        return plan

    def launch_training(self, keys: list[tuple[str, Stream]]) -> list[ray.ObjectRef]:
        """Each actor rank fetches its columns straight from the rollout workers and trains (not waited for)."""
        if self.cfg.actor.enable_offload:
            ray.get(self.actor.call("onload"))
        refs = []
        for rank, parts in enumerate(self.shard_assignment(keys)):
            shards = [self.rollout.workers[r].get_shard.remote(key, a, b) for key, r, a, b in parts]
            refs.append(self.actor.workers[rank].train.remote(*shards))
        return refs

    def collect_training(self, refs: list[ray.ObjectRef]) -> dict[str, float]:
        """Wait for the actor ranks; rank 0's metrics (already averaged over ranks)."""
        metrics = ray.get(refs)[0]
        if self.cfg.actor.enable_offload:
            ray.get(self.actor.call("offload"))
        return metrics

    def actor_training(self, keys: list[tuple[str, Stream]]) -> dict[str, float]:
        """Train on ``keys``' rollouts and wait for it."""
        return self.collect_training(self.launch_training(keys))

    def step(self) -> dict[str, float]:
        """One training step; returns its metrics (``env/*``, ``rollout/*``, ``train/*``, ``time/*`` tags, as metrics.jsonl and TensorBoard get them).

        With ``rollout.overlap_training`` the next step's rollouts are generated (with the weights of before
        this update) while the actor trains, except before a checkpoint or the last step, so a resumed run
        repeats an uninterrupted one; ``rollout/policy_lag`` is 1 for a batch generated that way."""
        wall0 = time.time()
        t0 = time.perf_counter()
        lag = 0.0
        if self.pending is None:
            self.ensure_rollout_current()
            t1 = time.perf_counter()
            keys = self.generate_rollouts()
        else:
            keys, self.pending, lag = self.pending, None, 1.0
            t1 = time.perf_counter()
        t2 = time.perf_counter()
        refs = self.launch_training(keys)
        this_step = self.global_step + 1
        overlapped = 0.0
        if (
            self.cfg.rollout.overlap_training
            and not self.saves_at(this_step)
            and this_step < self.cfg.runner.max_steps
        ):
            self.pending = self.generate_rollouts()
            overlapped = time.perf_counter() - t2
        train_metrics = self.collect_training(refs)
        self.rollout_current = False
        t3 = time.perf_counter()
        if self.pending is not None:  # the next batch is generated: the update reaches the one after
            self.sync_weights()
        train_metrics["rollout/policy_lag"] = lag
        if self.cfg.rollout.overlap_training:
            train_metrics["time/overlapped_generation"] = overlapped
        env_stats = ray.get(self.env.call("pop_stats"))
        rollout_stats = ray.get(self.rollout.call("clear", keys[0][0].split("/")[0] + "/"))
        metrics = {f"env/{k}": v for k, v in merge_stats(env_stats).items()}
        rewards = [s["rewards"] for s in rollout_stats if "rewards" in s]
        if rewards:
            metrics["rollout/rewards"] = sum(rewards) / len(rewards)
        t_adv = train_metrics.pop("time/cal_adv_and_returns", 0.0)
        metrics.update(train_metrics)
        metrics.update(
            {
                "time/sync_weights": t1 - t0,
                "time/generate_rollouts": (t2 - t1) + overlapped,
                "time/cal_adv_and_returns": t_adv,
                "time/actor_training": t3 - t2 - t_adv - overlapped,
                "time/step": time.perf_counter() - t0,
            }
        )
        metrics.update(self.compute_shares(wall0, time.time()))
        return metrics

    def compute_shares(self, start: float, end: float) -> dict[str, float]:
        """Share of [start, end] covered by env, model (rollout + actor) and any compute; the rest is
        transfers, weight sync and waiting."""
        busy = {
            g.component: [iv for ivs in g.get("pop_busy") for iv in ivs]
            for g in (self.env, self.rollout, self.actor)
        }
        span = max(end - start, 1e-9)
        every = busy["env"] + busy["rollout"] + busy["actor"]
        return {
            "time/env_compute_share": interval_union(busy["env"], start, end) / span,
            "time/model_compute_share": interval_union(busy["rollout"] + busy["actor"], start, end) / span,
            "time/outside_compute_share": 1.0 - interval_union(every, start, end) / span,
        }

    # ------------------------------------------------------------------ evaluation
    def evaluate(self) -> dict[str, float]:
        """Deterministic episodes on the eval envs (one per env per round) -> ``eval/<metric>``, with the
        rollout holding the latest update (so the evaluation after step N measures N updates); the policy's
        noise comes from the evaluations' own stream, the same each time, and leaves training's draws alone."""
        self.ensure_rollout_current()
        cfg = self.cfg
        ecfg = cfg.env.eval
        S = cfg.rollout.pipeline_stage_num
        rounds = math.ceil(cfg.env.eval_episodes / ecfg.num_envs)
        chunks = math.ceil(ecfg.max_episode_steps / ecfg.num_action_chunks)
        ray.get(self.rollout.call("begin_eval"))  # the policy's noise: the same draws every evaluation
        stats = []
        for round_idx in range(rounds):
            outs = {}
            for e, worker in enumerate(self.env.workers):
                refs = worker.eval_reset.options(num_returns=S).remote(round_idx)
                refs = refs if S > 1 else [refs]
                for s in range(S):
                    outs[(e, s)] = refs[s]
            for _ in range(chunks):
                for st in self.streams:
                    actions = self.rollout.workers[st.rollout_rank].predict.remote(
                        "eval", outs[(st.env_rank, st.stage)], "eval"
                    )
                    outs[(st.env_rank, st.stage)] = self.env.workers[st.env_rank].eval_step.remote(
                        st.stage, actions
                    )
            ray.get(list(outs.values()))
            stats.extend(ray.get(self.env.call("eval_pop_stats")))
        if ecfg.video_cfg.save_video:  # recorded by env rank 0; also shown in TensorBoard
            self.metrics.log_videos(ray.get(self.env.workers[0].eval_pop_videos.remote()), self.global_step)
        return {f"eval/{k}": v for k, v in merge_stats(stats).items()}

    # ------------------------------------------------------------------ checkpoints
    def saves_at(self, step: int) -> bool:
        """Whether training step ``step`` ends with a checkpoint (every ``save_interval`` and the last)."""
        rcfg = self.cfg.runner
        return rcfg.save_interval > 0 and (step % rcfg.save_interval == 0 or step == rcfg.max_steps)

    def save_checkpoint(self) -> str:
        """Write ``global_step_N`` atomically: actor DCP, rollout weights (synced with step N's update
        first, so an export from it holds N updates), runner state, config."""
        self.ensure_rollout_current()
        final = ckpt.step_dir(self.log_dir, self.global_step)
        os.makedirs(os.path.dirname(final), exist_ok=True)
        tmp = ckpt.temp_dir_for(final)
        actor_extra = ray.get(self.actor.call("save_checkpoint", os.path.join(tmp, "actor")))
        os.makedirs(os.path.join(tmp, "rollout"))
        ray.get(
            self.rollout.workers[0].save_weights.remote(os.path.join(tmp, "rollout", "model.safetensors"))
        )
        state = {
            "actor": actor_extra,
            "rollout_rng": ray.get(self.rollout.call("get_rng_state")),
            "env": ray.get(self.env.call("get_state")),
            "driver_rng": get_rng_state(),
            "rollout_current": True,
        }
        ckpt.save_runner_state(tmp, self.global_step, state)
        with open(os.path.join(tmp, "config.yaml"), "w") as f:
            yaml.safe_dump(self.cfg.model_dump(mode="json"), f, sort_keys=False)
        ckpt.commit(tmp, final)
        self.saved.append(final)
        return final

    def load_checkpoint(self, directory: str) -> None:
        """Restore everything ``save_checkpoint`` wrote, so the run continues exactly."""
        step, state = ckpt.load_runner_state(directory)
        actor_dir = os.path.join(os.path.abspath(directory), "actor")
        ray.get(self.actor.call_each("load_checkpoint", [(actor_dir, x) for x in state["actor"]]))
        ray.get(
            self.rollout.call(
                "load_weights", os.path.join(os.path.abspath(directory), "rollout", "model.safetensors")
            )
        )
        ray.get(self.rollout.call_each("set_rng_state", [(x,) for x in state["rollout_rng"]]))
        ray.get(self.env.call_each("set_state", [(x,) for x in state["env"]]))
        set_rng_state(state["driver_rng"])
        # checkpoints written before the rollout was synced at saving hold the weights of one update before
        # (the run then syncs at its next step, as it did when they were written)
        self.rollout_current = bool(state.get("rollout_current", False))
        self.global_step = step

    # ------------------------------------------------------------------ the loop
    def run(self) -> None:
        """Train until ``runner.max_steps``, evaluating and saving at their intervals."""
        from tqdm import tqdm

        rcfg = self.cfg.runner
        start = self.global_step
        bar = tqdm(
            total=rcfg.max_steps,
            initial=self.global_step,
            disable=not rcfg.progress_bar,
            desc="train",
            dynamic_ncols=True,
        )
        first = self.global_step == 0 and not self.stop.requested
        if self.cfg.env.eval is not None and rcfg.val_check_interval > 0 and first:
            self.first_eval = self.evaluate()
            self.metrics.log(self.first_eval, 0)
        while self.global_step < rcfg.max_steps and not self.stop.requested:
            metrics = self.step()
            self.global_step += 1
            if (
                self.cfg.env.eval is not None
                and rcfg.val_check_interval > 0
                and self.global_step % rcfg.val_check_interval == 0
            ):
                self.last_eval = self.evaluate()
                metrics.update(self.last_eval)
            self.metrics.log(metrics, self.global_step)
            self.recent_train = [*self.recent_train, metrics][-TRAIN_SUMMARY_STEPS:]
            if self.saves_at(self.global_step):
                self.save_checkpoint()
            with open(os.path.join(self.log_dir, "metrics.jsonl"), "a") as f:
                f.write(json.dumps({"step": self.global_step, **metrics}) + "\n")
            bar.update(1)
            bar.set_postfix(progress_postfix(metrics))
        bar.close()
        if self.stopped_early() and self.global_step > start and not self.saves_at(self.global_step):
            self.save_checkpoint()  # stopped early: the run continues from here with runner.resume_dir

    def stopped_early(self) -> bool:
        """Whether a SIGTERM stopped the loop before ``runner.max_steps``."""
        return self.stop.requested and self.global_step < self.cfg.runner.max_steps

    def shutdown(self) -> None:
        """Stop workers (envs closed, process groups destroyed) and Ray; safe to call twice."""
        for group in self.groups:
            try:
                if group.component == "env":
                    ray.get(group.call("close"), timeout=30)
                if group.component == "actor":
                    ray.get(group.call("shutdown"), timeout=30)
            except Exception:  # noqa: BLE001 - tearing down after an error
                pass
            group.kill()
        self.groups = []
        if hasattr(self, "metrics"):
            self.metrics.close()
        if self.cluster is not None:
            self.cluster.shutdown()
            self.cluster = None

    def write_placement(self) -> None:
        """``<log_dir>/placement.json``: for every component rank its device, node and the Ray node it runs on."""
        nodes = self.cluster.node_ids()
        record: dict[str, Any] = {"nodes": nodes, "devices_per_node": self.cluster.devices_per_node}
        for group in self.groups:
            where = ray.get([w.where.remote() for w in group.workers])
            record[group.component] = [
                {"rank": slot.rank, "device": slot.global_device, "node": slot.node, **w}
                for slot, w in zip(group.slots, where, strict=True)
            ]
        with open(os.path.join(self.log_dir, "placement.json"), "w") as f:
            json.dump(record, f, indent=1)

    def summary(self) -> str:
        """A one-screen report: where the logs, videos and checkpoints are; eval success before and after."""
        lines = [
            "=" * 72,
            f"worldrl run {'stopped' if self.stopped_early() else 'finished'}: {self.global_step} steps",
        ]
        wm_pred = getattr(self.cfg.env.train, "dynamics_model_output_path", None) or prediction_video_dir(
            self.log_dir
        )
        lines += output_paths(self.log_dir, self.saved[-1] if self.saved else None, wm_pred)
        lines += train_summary(self.recent_train)
        imagined = self.cfg.env.eval is not None and self.cfg.env.eval.env_type == "world_model"
        lines += eval_summary(self.first_eval, self.last_eval, "imagination" if imagined else "the real env")
        lines.append("=" * 72)
        return "\n".join(lines)


def run_job(cfg: JobConfig) -> EmbodiedRunner:
    """Run a validated job end to end; workers are shut down on success, error, Ctrl-C and SIGTERM. An error
    becomes ``JobFailed`` (one line naming the worker and the cause; the traceback in ``<log_dir>/error.log``);
    a SIGTERM (also one while the workers start) stops after the current step with a checkpoint and raises
    ``JobStopped`` naming it."""
    runner = EmbodiedRunner(cfg)
    try:
        # the stop handler covers the workers' start too (setup takes it back from ray.init's)
        with stop_on_sigterm() as runner.stop:
            runner.setup()
            runner.run()
    except KeyboardInterrupt:
        print("interrupted: shutting down workers", flush=True)
        raise
    except Exception as err:
        raise record_failure(err, runner.log_dir) from err
    finally:
        runner.shutdown()
    print(runner.summary(), flush=True)
    if runner.stopped_early():
        raise JobStopped(  # stopped before its first step: the checkpoint it resumed from still holds
            runner.stop.signal_name or "SIGTERM",
            runner.global_step,
            (runner.saved or [cfg.runner.resume_dir])[-1],
        )
    return runner
