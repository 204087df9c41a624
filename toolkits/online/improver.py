"""The improver: watch a server's recordings; when enough new episodes with an outcome have arrived, improve the
registry's current policy on them, gate the candidate against the current version and publish it if it passes.

    worldrl improve [online/improve_metaworld] registry=R recordings=D work_dir=W [reward_model=M] [key=value ...]

A round: the new episodes are checked (an unreadable one is quarantined: listed in the state with one log line, never
read again); every ``holdout_every``-th is held out for the gate. The policy is trained warm from the current version
on every recorded training episode so far: advantage-conditioned imitation when a reward model labels them, else
filtered imitation of the successful ones (all a robot's success flag gives); with ``method=imagination``, RL in the
observation world model refitted warm on them (``toolkits/online/imagination.py``), gated also on imagined success from
the held-out episodes' starts. Training runs as Ray tasks (``train_resources``; the RL job on its own Ray
workers). The gate compares the candidate's
flow-matching loss on the held-out episodes with the current version's and, in simulation (``gate.eval_tasks``),
their Meta-World success on layouts never served. A candidate that passes becomes the next version (its manifest:
parent, round, episodes, gate metrics); the server following the registry serves it from the next episode.

``work_dir/state.json`` (rewritten atomically after each round) keeps which episodes were used, held out or
quarantined and every round's decision; a killed improver restarts at the round it was in, and a round it had already
published is not published twice. Progress and decisions go to its log and to TensorBoard (``work_dir/tensorboard``).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from toolkits.base.atomic import write_json_atomically
from toolkits.online.config import ImproverConfig, check_improver

STATE = "state.json"


def sft_job_data(cfg: ImproverConfig, data: str, out: str, init: Path) -> dict[str, Any]:
    """The imitation job of a round, composed: warm from the version ``init`` (its state type) on ``data``; the
    user's ``sft_overrides`` last."""
    from toolkits.base.compose import compose_config

    conditioned = cfg.reward_model is not None
    state_type = json.loads((init / "deploy.json").read_text()).get("state_type") or "full"
    overrides = [f"data.path={data}", f"output_dir={out}", f"init_model_dir={init}", "data.holdout_fraction=0",
                 "norm_stats_from=init",
                 f"data.success_only={str(not conditioned).lower()}", f"data.state_type={state_type}",
                 f"model.pi0.with_advantage_condition={str(conditioned).lower()}", *cfg.sft_overrides]  # fmt: skip
    return compose_config(cfg.sft_config, overrides)


def check(cfg: ImproverConfig) -> None:
    """``check_improver`` and the round's imitation job composed and validated with the user's overrides."""
    from pydantic import ValidationError

    from policy_and_value.offline.config import SFTConfig
    from toolkits.base.errors import ConfigError, format_validation_error
    from toolkits.deploy.registry import PolicyRegistry

    check_improver(cfg)
    current = PolicyRegistry(cfg.registry).current_path()
    if cfg.method == "imagination":
        from toolkits.online.imagination import check_imagination

        return check_imagination(cfg, current)
    data = sft_job_data(cfg, cfg.recordings, cfg.work_dir, current)
    try:
        SFTConfig.model_validate(data)
    except ValidationError as err:
        raise ConfigError(f"{format_validation_error(err, data, SFTConfig)} (sft_overrides)") from None


class Improver:
    """One improver over ``cfg``'s registry and recordings; ``run`` loops, ``round_if_ready`` does one check."""

    def __init__(self, cfg: ImproverConfig, log=print):
        from toolkits.base.metric_logger import MetricLogger
        from toolkits.deploy.registry import PolicyRegistry

        self.cfg, self.log = cfg, log
        self.registry = PolicyRegistry(cfg.registry)
        self.work = Path(cfg.work_dir)
        self.work.mkdir(parents=True, exist_ok=True)
        path = self.work / STATE
        self.state: dict[str, Any] = (
            json.loads(path.read_text()) if path.is_file()
            else {"train": [], "heldout": [], "quarantined": {}, "rounds": []}
        )  # fmt: skip
        self.metrics = MetricLogger(str(self.work), ["tensorboard"], "worldrl", "improver", cfg.model_dump())

    # ---- episodes
    def new_episodes(self) -> list[str]:
        """Recorded episodes with a known outcome not used, held out or quarantined yet (unreadable ones are
        quarantined here)."""
        from toolkits.episodes import EpisodeDataset

        ds = EpisodeDataset(self.cfg.recordings)
        known = {
            *self.state["train"],
            *self.state["heldout"],
            *self.state["quarantined"],
            *self.state.get("pending", []),
        }
        fresh = []
        for i, entry in enumerate(ds.entries):
            if entry["file"] in known or entry.get("success_once") is None:  # outcome unknown: not used
                continue
            try:
                ds[i]
            except Exception as err:  # noqa: BLE001 - any unreadable file is set aside, the service goes on
                reason = " ".join(str(err).split())[:300]
                self.state["quarantined"][entry["file"]] = reason
                self.log(f"improver: {entry['file']} quarantined: {reason}")
                continue
            fresh.append(entry["file"])
        return fresh

    def _subset(self, files: list[str], dst: Path) -> str:
        """A dataset of the recordings' ``files`` at ``dst`` (hard links where it can; its own index)."""
        from toolkits.episodes.format import read_index
        from toolkits.episodes.subset import write_dataset

        index = read_index(os.path.join(self.cfg.recordings, "index.json"))
        wanted = set(files)
        shutil.rmtree(dst, ignore_errors=True)  # a round a killed improver left half done
        entries = [e for e in index["episodes"] if e["file"] in wanted]
        write_dataset(self.cfg.recordings, str(dst), {**index, "episodes": entries, "summary": {}}, link=True)
        return str(dst)

    # ---- a round
    def round_if_ready(self) -> dict[str, Any] | None:
        """Take the new episodes; run a round when ``min_new_episodes`` wait (returns its record), else None. A
        round a killed improver had started (its episodes assigned, no record yet) is run again first."""
        if self.state.get("running"):
            return self.run_round(**self.state["running"])
        fresh = self.new_episodes()
        pending = self.state.get("pending", []) + fresh
        if len(pending) < self.cfg.min_new_episodes:
            self.state["pending"] = pending
            self._save()
            return None
        for name in pending:  # the k-th episode assigned is held out when k is a multiple of holdout_every
            k = len(self.state["train"]) + len(self.state["heldout"]) + 1
            self.state["heldout" if k % self.cfg.holdout_every == 0 else "train"].append(name)
        self.state["pending"] = []
        self.state["running"] = {"number": len(self.state["rounds"]) + 1, "new": len(pending)}
        self._save()
        return self.run_round(**self.state["running"])

    def run_round(self, number: int, new: int) -> dict[str, Any]:
        """Train, gate and (if it passes) publish round ``number``'s candidate; the round's record."""
        from policy_and_value.offline.config import SFTConfig
        from policy_and_value.offline.train_sft import train_sft
        from toolkits.online.ray_tasks import run_on_ray

        start, cfg = time.time(), self.cfg
        parent = self.registry.current()
        assert parent is not None  # checked before any work
        done = self._published(number)
        if done is not None:  # killed after publishing, before the state was written
            return self._finish({"round": number, "published": done, "parent": parent, "resumed": True})
        where = self.work / f"round_{number:03d}"
        data = self._subset(self.state["train"], where / "train")
        held = self._subset(self.state["heldout"], where / "heldout")
        if cfg.reward_model is not None:
            from reward_models.label import label_dataset

            for name in ("train", "heldout"):
                label_dataset(
                    cfg.reward_model, str(where / name), str(where / f"{name}_labelled"), cfg.label_horizon
                )
            data, held = str(where / "train_labelled"), str(where / "heldout_labelled")
        self.log(f"improver: round {number}: {new} new episodes; training on {len(self.state['train'])}, "
                 f"{len(self.state['heldout'])} held out; from version {parent}")  # fmt: skip
        current, imagined, in_imagination = self.registry.path(parent), {}, cfg.method == "imagination"
        if in_imagination:
            from toolkits.online.imagination import NothingToImagine, imagined_round

            try:
                candidate, imagined, world_model = imagined_round(
                    cfg, current, where, data, held, self.state.get("world_model"), self.log
                )
            except NothingToImagine as err:  # a later round, with more recordings, may have starts
                return self._finish(
                    {"round": number, "parent": parent, "new_episodes": new, "skipped": str(err)}
                )
        else:
            job = SFTConfig.model_validate(sft_job_data(cfg, data, str(where / "sft"), current))
            self.log(
                f"improver: round {number}: imitation as a Ray task ({cfg.train_resources.model_dump()})"
            )
            candidate = run_on_ray(train_sft, job, **cfg.train_resources.model_dump())
        shutil.copy2(current / "deploy.json", candidate / "deploy.json")  # the same robot-facing interface
        gate = self.gate(current, candidate, held, imagined)
        record = {"round": number, "parent": parent, "new_episodes": new, "gate": gate,
                  "train_episodes": len(self.state["train"]), "heldout_episodes": len(self.state["heldout"])}  # fmt: skip
        if in_imagination:  # later rounds start from this refit, published or not
            record["world_model"] = self.state["world_model"] = world_model
        if gate["passed"]:
            recipe = "advantage-conditioned imitation" if cfg.reward_model else "filtered imitation"
            source = {"improver_round": number, "improver_work_dir": str(self.work.resolve()),
                      "recordings": str(Path(cfg.recordings).resolve()), "episodes": len(self.state["train"]),
                      "recipe": "RL in imagination" if in_imagination else recipe}  # fmt: skip
            if in_imagination:
                source["world_model"] = str(Path(world_model).resolve())
            record["published"] = self.registry.publish_directory(candidate, source=source, gate=gate)
        record["seconds"] = round(time.time() - start, 1)
        return self._finish(record)

    def gate(self, current: Path, candidate: Path, held: str, imagined: dict[str, float]) -> dict[str, Any]:
        """The candidate against the current version (each loaded once): held-out loss ratio, ``imagined`` success
        gain (recipe imagination) and (in simulation) success gain. The candidate has the current version's
        deploy.json, so both read the same inputs."""
        from policy_and_value.models.pi0 import from_pretrained
        from policy_and_value.offline.dataset import ChunkDataset
        from policy_and_value.offline.train_sft import heldout_loss
        from toolkits.episodes import EpisodeDataset

        cfg, deploy = self.cfg.gate, json.loads((current / "deploy.json").read_text())
        state_type = deploy.get("state_type") or "full"
        policies = {
            "current": from_pretrained(current).eval(),
            "candidate": from_pretrained(candidate).eval(),
        }
        # filtered imitation is measured on what it imitates; the other recipes on every held-out episode
        filtered = self.cfg.method == "imitation" and self.cfg.reward_model is None
        episodes = EpisodeDataset(held, success=True if filtered else None)
        out: dict[str, Any] = {}
        if len(episodes):
            losses = {}
            for name, policy in policies.items():
                labelled = policy.cfg.with_advantage_condition and self.cfg.reward_model is not None
                chunks = ChunkDataset(
                    episodes, policy.cfg.chunk_size, state_type=state_type, with_advantages=labelled
                )
                losses[name] = heldout_loss(policy, chunks)
            out.update(heldout_loss_current=losses["current"], heldout_loss_candidate=losses["candidate"],
                       heldout_loss_ratio=losses["candidate"] / max(losses["current"], 1e-12))  # fmt: skip
        passed = out.get("heldout_loss_ratio", 0.0) <= cfg.max_heldout_loss_ratio
        out.update(imagined)
        if imagined and cfg.min_imagined_gain is not None:
            passed = passed and imagined["imagined_gain"] >= cfg.min_imagined_gain
        if cfg.eval_tasks:
            success = {name: self.simulator_success(policy, deploy) for name, policy in policies.items()}
            out.update(success_current=success["current"], success_candidate=success["candidate"],
                       success_gain=success["candidate"] - success["current"])  # fmt: skip
            passed = passed and out["success_gain"] >= cfg.min_success_gain
        out["passed"] = bool(passed)
        return out

    def simulator_success(self, policy: Any, deploy: dict[str, Any]) -> float:
        """Mean Meta-World success of ``policy`` (its ``deploy.json`` as ``deploy``) on ``gate.eval_tasks``, layouts
        of ``gate.eval_layout_seed``."""
        from policy_and_value.offline.evaluate import evaluate_in_metaworld

        cfg = self.cfg.gate
        res = evaluate_in_metaworld(
            policy, cfg.eval_tasks, cfg.eval_episodes, deploy["cameras"], deploy["image_size"],
            deploy.get("state_type") or "full", cfg.eval_max_episode_steps, seed=1000, layout_seed=cfg.eval_layout_seed,
        )  # fmt: skip
        return sum(r["success_rate"] for r in res.values()) / len(res)

    def _published(self, number: int) -> int | None:
        """The version this work dir already published for round ``number`` (None: not published)."""
        for version in self.registry.versions():
            source = self.registry.manifest(version).source
            if source.get("improver_round") == number and source.get("improver_work_dir") == str(
                self.work.resolve()
            ):
                return version
        return None

    def _finish(self, record: dict[str, Any]) -> dict[str, Any]:
        self.state["rounds"].append(record)
        self.state.pop("running", None)
        self._save()
        gate = record.get("gate", {})
        self.metrics.log({f"gate/{k}": float(v) for k, v in gate.items()}
                         | {"round/published": float(record.get("published") is not None)}, record["round"])  # fmt: skip
        decision = f"published version {record['published']}" if record.get("published") else "not published"
        if "skipped" in record:
            decision = f"skipped: {record['skipped']}"
        shown = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in gate.items())
        self.log(f"improver: round {record['round']}: {decision} (from version {record['parent']}; {shown})")
        return record

    def _save(self) -> None:
        write_json_atomically(str(self.work / STATE), self.state)

    def run(self) -> None:
        """Check every ``poll_seconds`` until stopped (``once``: a single check; ``max_rounds``: that many)."""
        self.log(f"improver: watching {self.cfg.recordings} for {self.cfg.registry} (current version "
                 f"{self.registry.current()}; a round every {self.cfg.min_new_episodes} new episodes)")  # fmt: skip
        try:
            while True:
                self.round_if_ready()
                done = self.cfg.max_rounds is not None and len(self.state["rounds"]) >= self.cfg.max_rounds
                if self.cfg.once or done:
                    return
                time.sleep(self.cfg.poll_seconds)
        finally:
            self.metrics.close()


def main(argv: list[str] | None = None) -> int:
    """CLI: compose ``configs/online/<CONFIG>.yaml`` with overrides, check, improve until stopped."""
    from toolkits.base.cli import job_cli

    return job_cli(
        argv, "online/improve_metaworld", ImproverConfig, check, lambda c: Improver(c).run(), __doc__
    )


if __name__ == "__main__":
    sys.exit(main())
