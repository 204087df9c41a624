"""Does a co-evolution's refit predict the next policy's real rollouts better than the model it started from?

    .venv/bin/python -m experiments.harness.coevolution_model_error --run logs/coevo_focus/wm_seed2 \\
        --initial assets/world_models/state_outcome20_both/model

For each round r of a co-evolution log dir (``<run>/coevolution/round_<r>``), its real rollouts (the policy after
round r's RL) are scored by the initial state model, by the model refitted after round r-1 (the one the round's
RL trained in: it has not seen these rollouts) and by the model refitted on them: the open-loop state error
after ``--horizon`` chunks (in each dimension's typical change over a chunk, and the hand's in metres, against
"the state stays") and the success classifier's AUC on the real and on the predicted states. A refit that learns
the current policy's world shows as the previous round's model beating the initial one on rollouts it never saw.
"""

from __future__ import annotations

import argparse
import os


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--run", required=True, help="a co-evolution's log dir (holds coevolution/round_<r>)")
    p.add_argument("--initial", required=True, help="the state model round 1 trained in")
    p.add_argument("--horizon", type=int, default=8, help="chunks rolled open loop per window")
    p.add_argument("--samples", type=int, default=2048, help="windows scored per round (all when fewer)")
    args = p.parse_args(argv)

    from toolkits.episodes import EpisodeDataset
    from world_models.state_data import StateWindows
    from world_models.state_model import StateModel
    from world_models.train_state_model import evaluate

    root = os.path.join(args.run, "coevolution")
    rounds = sorted(
        int(d.removeprefix("round_")) for d in os.listdir(root) if d.startswith("round_") and d[6:].isdigit()
    )
    model_of = {0: args.initial}
    model_of.update({r: os.path.join(root, f"round_{r}", "state_model", "model") for r in rounds})
    # each model is read once (up to three rounds score with it); warm refits keep the initial model's chunk
    loaded = {0: StateModel.from_pretrained(args.initial).eval()}
    chunk = loaded[0].cfg.action_chunk
    keys = ("open_loop_rms", "stays_rms", "hand_error_m", "success_auc_real_states", "success_auc_predicted_states",
            "reward_r2_real_states", "reward_r2_predicted_states")  # fmt: skip
    print(f"| round | rollouts (windows) | model | {' | '.join(keys)} |")
    print("|---|---|---|" + "---|" * len(keys))
    for r in rounds:
        episodes_dir = os.path.join(root, f"round_{r}", "episodes")
        if not os.path.isdir(episodes_dir) or not os.path.isfile(os.path.join(model_of[r], "config.json")):
            continue
        episodes = EpisodeDataset(episodes_dir)
        windows = StateWindows(episodes, list(range(len(episodes))), chunk, args.horizon)
        scored = [("initial", 0), (f"after round {r - 1}", r - 1), (f"after round {r}", r)]
        if r == 1:  # round 1's RL trained in the initial model
            del scored[1]
        for label, m in scored:
            if m not in loaded:
                loaded[m] = StateModel.from_pretrained(model_of[m]).eval()
            found = evaluate(loaded[m], windows, args.horizon, samples=args.samples)
            row = " | ".join(f"{found[k]:.3f}" if k in found else "" for k in keys)
            print(f"| {r} | {len(episodes)} ({len(windows)}) | {label} | {row} |", flush=True)


if __name__ == "__main__":
    main()
