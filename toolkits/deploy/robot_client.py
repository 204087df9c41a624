"""A robot stand-in: Meta-World episodes driven through openpi's own client against a policy server.

    python -m toolkits.deploy.robot_client --host 127.0.0.1 --port 8000 --tasks reach-v3 drawer-close-v3 \\
        --episodes 10 [--api-key KEY] [--compare-policy-dir DIR]

Each env asks ``openpi_client``'s ``ActionChunkBroker`` (around one ``WebsocketClientPolicy``) for an
action at every step, sending openpi-style observations (each camera's HWC uint8 frame under the key
the server's metadata names, the state, the instruction); the broker queries the server once per
chunk. Cameras, image size, state size and chunk size come from the server's metadata. The layouts
are those ``python -m policy_and_value.offline.evaluate`` plays with the same ``--seed``,
``--layout-seed``, ``--num-envs`` and ``--max-episode-steps``: with ``--compare-policy-dir`` the same
episodes are also played in-process (``evaluate_in_metaworld``) with the directory's policy under
the server's per-request noise (start the server with ``--seed``), and the two successes are compared.

Against a server that records (``serve_policy --record DIR``; its metadata says ``"recording": true``)
each env gets its own connection (one robot, one episode at a time), sends every step the broker does
not query as ``{"record_step": true, ...}`` and ends each episode with ``{"episode_end": true,
"success": bool, ...}`` carrying the final observation, so the server saves complete episodes.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from typing import Any

import numpy as np
import torch

from toolkits.base.cli import tool_prog
from toolkits.deploy.served import ObservationKeys, ServedPolicy, client_observation


def episode_env(
    tasks: list[str],
    episodes_per_task: int,
    cameras: list[str],
    image_size: int,
    state_type: str,
    chunk: int,
    max_episode_steps: int,
    num_envs: int | None,
    seed: int,
    layout_seed: int,
) -> Any:
    """The batched ``MetaWorldEnv`` that ``evaluate_in_metaworld`` builds for the same arguments."""
    from policy_and_value.config.schema import env_config
    from policy_and_value.envs.metaworld_env import MetaWorldEnv

    num_envs = num_envs or len(tasks) * min(episodes_per_task, 10)
    num_envs = max(len(tasks), num_envs - num_envs % len(tasks))
    cfg = env_config(
        env_type="metaworld", tasks=tasks, num_envs=num_envs, num_action_chunks=chunk,
        max_episode_steps=max_episode_steps, auto_reset=False, cameras=cameras, image_size=image_size,
        state_type=state_type, layout_seed=layout_seed,
    )  # fmt: skip
    return MetaWorldEnv(cfg, num_envs, seed=seed)


def metadata_keys(meta: dict[str, Any]) -> ObservationKeys:
    """The request keys the server named in its metadata."""
    return ObservationKeys(list(meta["image_keys"]), meta["state_key"], meta["prompt_key"])


def play_served_round(
    env: Any,
    brokers: list[Any],
    keys: ObservationKeys,
    recorders: list[Any] | None = None,
    horizon: int = 1,
    acks: list[dict] | None = None,
) -> torch.Tensor:
    """Reset ``env`` and play one episode per env, one action per step from each env's broker; bool
    [num_envs]: whether each env reported success before its limit. With ``recorders`` (each env's own
    client, the connection its broker queries through) the steps between the broker's queries (every
    ``horizon``) go to the server as ``record_step`` and each episode ends with ``episode_end`` (its
    outcome and final observation); the server's answers to those are appended to ``acks``."""
    obs, _ = env.reset()
    for broker in brokers:
        broker.reset()
    alive = torch.ones(env.num_envs, dtype=torch.bool)
    success = torch.zeros(env.num_envs, dtype=torch.bool)
    steps = [0] * env.num_envs
    while alive.any():
        actions = torch.zeros(env.num_envs, 1, env.action_dim)
        images, state = obs["images"].numpy(), obs["state"].numpy()
        for i in torch.nonzero(alive).flatten().tolist():
            seen = client_observation(keys, images[i], state[i], obs["prompt"][i])
            if recorders is not None and steps[i] % horizon != 0:  # mid-chunk: the broker will not query
                recorders[i].infer({"record_step": True, **seen})
            step = brokers[i].infer(seen)
            steps[i] += 1
            actions[i, 0] = torch.tensor(np.asarray(step["actions"], dtype=np.float32))
        obs, _, terminated, truncated, _ = env.chunk_step(actions.clamp(-1, 1))
        success |= alive & terminated
        ended = alive & (terminated | truncated)
        if recorders is not None:
            images, state = obs["images"].numpy(), obs["state"].numpy()
            for i in torch.nonzero(ended).flatten().tolist():
                final = client_observation(keys, images[i], state[i], obs["prompt"][i])
                ack = recorders[i].infer({"episode_end": True, "success": bool(terminated[i]), **final})
                if acks is not None:
                    acks.append(ack)
        alive &= ~ended
    return success


def run_served_episodes(
    host: str,
    port: int | None,
    tasks: list[str],
    episodes_per_task: int,
    api_key: str | None = None,
    max_episode_steps: int | None = None,
    num_envs: int | None = None,
    seed: int = 1000,
    layout_seed: int = 0,
    acks: list[dict] | None = None,
) -> tuple[dict[str, list[bool]], dict[str, Any]]:
    """Play ``episodes_per_task`` Meta-World episodes per task against the server; per-task successes
    (in episode order) and the server's metadata. A recording server gets one connection per env, every
    step and each outcome (its ``episode_end`` answers go to ``acks``; a last round may record more
    episodes than it counts)."""
    from openpi_client.action_chunk_broker import ActionChunkBroker
    from openpi_client.websocket_client_policy import WebsocketClientPolicy

    from policy_and_value.envs.metaworld_tasks import state_type_for

    client = WebsocketClientPolicy(host, port, api_key=api_key)
    meta = client.get_server_metadata()
    keys = metadata_keys(meta)
    state_type = meta.get("state_type") or state_type_for(int(meta["state_dim"]))
    steps = max_episode_steps or meta.get("max_episode_steps") or 150
    env = episode_env(
        tasks, episodes_per_task, list(meta["cameras"]), int(meta["image_size"][0]), state_type,
        int(meta["chunk_size"]), steps, num_envs, seed, layout_seed,
    )  # fmt: skip
    horizon = int(meta["chunk_size"])
    recorders = None
    clients = [client]
    if meta.get("recording"):  # one connection (robot) per env, each with its own episode on the server
        recorders = [client] + [
            WebsocketClientPolicy(host, port, api_key=api_key) for _ in range(env.num_envs - 1)
        ]
        clients = recorders
    brokers = [ActionChunkBroker(recorders[i] if recorders else client, horizon) for i in range(env.num_envs)]
    results: dict[str, list[bool]] = defaultdict(list)
    try:
        while min(len(results[t]) for t in tasks) < episodes_per_task:
            success = play_served_round(env, brokers, keys, recorders, horizon, acks)
            for i, task_id in enumerate(env.task_ids):
                if len(results[tasks[task_id]]) < episodes_per_task:
                    results[tasks[task_id]].append(bool(success[i]))
    finally:
        env.close()
        for c in clients:
            c._ws.close()  # the client has no close(); leave the server a clean close frame
    return {t: results[t] for t in tasks}, meta


class PerObservationPolicy:
    """A ``ServedPolicy`` as ``evaluate_in_metaworld`` calls a policy: each env's observation is sent
    through the server's own parsing and inference, one at a time, as the robot client sends it."""

    def __init__(self, served: ServedPolicy):
        self.served = served
        self.num_action_chunks = served.spec.chunk_size

    def eval(self) -> PerObservationPolicy:
        """evaluate_in_metaworld calls ``policy.eval()``; nothing to switch."""
        return self

    def predict(self, obs: dict[str, Any], mode: str = "eval") -> Any:
        """Actions [N, C, A] for a batch, row by row through ``ServedPolicy.infer``."""
        from policy_and_value.models.base import PolicyOutput

        images, state = obs["images"].numpy(), obs["state"].numpy()
        rows = [
            self.served.infer(client_observation(self.served.keys, images[i], state[i], obs["prompt"][i]))[
                "actions"
            ]
            for i in range(len(obs["prompt"]))
        ]
        actions = torch.from_numpy(np.stack(rows))
        return PolicyOutput(actions, torch.zeros(len(rows)), None, {})


def run_in_process_episodes(
    policy_dir: str,
    meta: dict[str, Any],
    tasks: list[str],
    episodes_per_task: int,
    max_episode_steps: int | None = None,
    num_envs: int | None = None,
    seed: int = 1000,
    layout_seed: int = 0,
) -> dict[str, float]:
    """In-process evaluation (``evaluate_in_metaworld``) of ``policy_dir`` on the layouts the robot client
    plays, with the server's cameras, keys and per-request noise seed; success rate per task."""
    from policy_and_value.envs.metaworld_tasks import state_type_for
    from policy_and_value.offline.evaluate import evaluate_in_metaworld

    served = ServedPolicy(
        policy_dir, cameras=meta["cameras"], image_keys=meta["image_keys"], state_key=meta["state_key"],
        prompt_key=meta["prompt_key"], seed=meta.get("noise_seed"),
    )  # fmt: skip
    served.spec.prompts = dict(meta.get("prompts") or {})
    state_type = meta.get("state_type") or state_type_for(int(meta["state_dim"]))
    steps = max_episode_steps or meta.get("max_episode_steps") or 150
    res = evaluate_in_metaworld(
        PerObservationPolicy(served), tasks, episodes_per_task, list(meta["cameras"]), int(meta["image_size"][0]),
        state_type, steps, num_envs, seed, layout_seed,
    )  # fmt: skip
    return {t: r["success_rate"] for t, r in res.items()}


def main(argv: list[str] | None = None) -> int:
    """CLI: play the episodes against the server and print success per task (and the comparison)."""
    p = argparse.ArgumentParser(
        prog=tool_prog("toolkits.deploy.robot_client"), description=__doc__.splitlines()[0]
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--api-key", default=None)
    p.add_argument(
        "--tasks", nargs="+", required=True, help="Meta-World tasks, e.g. reach-v3 drawer-close-v3"
    )
    p.add_argument("--episodes", type=int, default=10, help="episodes per task")
    p.add_argument("--max-episode-steps", type=int, default=None, help="default: the server's, else 150")
    p.add_argument(
        "--num-envs", type=int, default=None, help="envs played together (as evaluate's --num-envs)"
    )
    p.add_argument("--seed", type=int, default=1000, help="layout draws (as evaluate's --seed)")
    p.add_argument("--layout-seed", type=int, default=0, help="which 50 layouts per task (as evaluate's)")
    p.add_argument(
        "--compare-policy-dir", default=None, help="also evaluate this directory in-process and compare"
    )
    args = p.parse_args(argv)
    from policy_and_value.envs.metaworld_tasks import MT50_TASKS

    bad = [t for t in args.tasks if t not in MT50_TASKS]
    if bad or args.episodes < 1:
        what = (
            f"--tasks: {bad} are not Meta-World MT50 tasks"
            if bad
            else f"--episodes={args.episodes}: must be >= 1"
        )
        print(f"error: {what}", file=sys.stderr)
        return 2
    start = time.time()
    acks: list[dict] = []
    try:
        served, meta = run_served_episodes(
            args.host, args.port, args.tasks, args.episodes, args.api_key, args.max_episode_steps, args.num_envs,
            args.seed, args.layout_seed, acks,
        )  # fmt: skip
    except (OSError, RuntimeError) as err:
        print(f"error: ws://{args.host}:{args.port}: {' '.join(str(err).split())[:500]}", file=sys.stderr)
        return 1
    rates = {t: float(np.mean(s)) for t, s in served.items()}
    local = None
    if args.compare_policy_dir:
        local = run_in_process_episodes(
            args.compare_policy_dir, meta, args.tasks, args.episodes, args.max_episode_steps, args.num_envs,
            args.seed, args.layout_seed,
        )  # fmt: skip
    head = "| task | episodes | served success |" + (" in-process success |" if local else "")
    print(head + "\n" + "|---" * (4 if local else 3) + "|")
    for task, rate in rates.items():
        extra = f" {local[task]:.0%} |" if local else ""
        print(f"| {task} | {len(served[task])} | {rate:.0%} |{extra}")
    print(f"mean served success {np.mean(list(rates.values())):.1%} in {time.time() - start:.0f} s")
    if meta.get("recording"):
        saved = [a for a in acks if a.get("file")]
        print(f"the server recorded {len(saved)} episodes ({sum(a['steps'] for a in saved)} steps)")
    if local is not None:
        same = all(abs(rates[t] - local[t]) < 1e-9 for t in rates)
        seed_note = (
            ""
            if meta.get("noise_seed") is not None
            else " (the server draws fresh noise: start it with --seed)"
        )
        print(f"served and in-process success {'match' if same else 'DIFFER'}{seed_note}")
        return 0 if same else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
