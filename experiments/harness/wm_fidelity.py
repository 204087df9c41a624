"""Fidelity of a trained dynamics model on held-out episodes: PSNR and SSIM of the frames it imagines
over one action chunk, against two baselines, per task.

    .venv/bin/python -m experiments.harness.wm_fidelity --data DATA --model-dir logs/wm/model [--holdout 0.1 --seed 0]

DATA is the episode dataset the model was trained on (``python -m world_models.train data.path=DATA``);
the held-out episodes are the ones that training set aside (same split, same ``--holdout`` and
``--seed`` as ``data.holdout_fraction`` and ``train.seed``). Every chunk start along each held-out
episode (stride ``--stride``) is predicted from the real history frames, and each of the ``T_f``
predicted frames is compared with the real one. With ``--horizon K`` the model imagines K chunks open
loop (each from its own imagined frames, as the world-model env does) and the K-th chunk is scored.
Rows:

- ``model``: the dynamics model given the recorded actions;
- ``zero actions``: the same model and noise, actions zeroed (the gap to ``model`` shows that actions
  steer the prediction);
- ``repeat last``: the last history frame repeated (nothing moves);
- ``vae recon``: the real future frames through the VAE alone (the ceiling the latent model can reach).
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict

import numpy as np
import torch
from torchmetrics.functional.image import peak_signal_noise_ratio, structural_similarity_index_measure

ROWS = ("model", "zero actions", "repeat last", "vae recon")


def frame_metrics(pred: torch.Tensor, real: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-sample PSNR and SSIM (data range 255) of uint8 frames [N, T, V, H, W, 3], averaged over T and V."""
    n = pred.shape[0]
    p = pred.flatten(0, 2).permute(0, 3, 1, 2).float()
    r = real.flatten(0, 2).permute(0, 3, 1, 2).float()
    psnr = peak_signal_noise_ratio(p, r, data_range=255.0, reduction="none", dim=(1, 2, 3))
    ssim = structural_similarity_index_measure(p, r, data_range=255.0, reduction="none")
    return psnr.reshape(n, -1).mean(1), ssim.reshape(n, -1).mean(1)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True)
    p.add_argument("--model-dir", required=True)
    p.add_argument("--holdout", type=float, default=0.1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--stride", type=int, default=4, help="steps between predicted chunk starts")
    p.add_argument("--horizon", type=int, default=1, help="chunks imagined open loop; the last is scored")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--num-inference-steps", type=int, default=None)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = p.parse_args()

    from policy_and_value.envs.metaworld_tasks import state_type_for
    from toolkits.episodes import EpisodeDataset, split_episodes
    from world_models.data import ChunkTransitions
    from world_models.dynamics_model import DynamicsModel
    from world_models.imagination import open_loop

    model = DynamicsModel.from_pretrained(args.model_dir, device=args.device)
    cfg = model.cfg
    episodes = EpisodeDataset(args.data)
    _, held = split_episodes(episodes.entries, args.holdout, args.seed)
    state_type = state_type_for(cfg.state_dim)
    k = args.horizon  # K chunks from one start: K * T_f frames after K * C actions
    data = ChunkTransitions(
        episodes, held, cfg.history_frames, k * cfg.future_frames, k * cfg.action_chunk, state_type
    )
    tasks = sorted({episodes.entries[i]["task"] for i in held})
    sample_task = np.array([episodes.entries[i]["task"] for i in data.episode_of])
    chosen = torch.arange(len(data))[:: args.stride] if args.stride > 1 else torch.arange(len(data))
    print(f"{len(held)} held-out episodes of {tasks}; {len(chosen)} starts; chunk {k} of {k} open loop "
          f"scored; chunks of {cfg.action_chunk} actions, {cfg.future_frames} frames each, {cfg.num_views} views")  # fmt: skip
    scores: dict[str, dict[str, list[torch.Tensor]]] = {r: defaultdict(list) for r in ROWS}

    seconds = 0.0
    for part in chosen.split(args.batch):
        b = data.batch(part)
        real = b["future_images"][:, -cfg.future_frames :]  # the last chunk's frames
        if real.shape[3] != cfg.image_size:
            raise SystemExit(f"episodes are {real.shape[3]} px, the model {cfg.image_size} px")
        noise = torch.randn((1, *model.noise_shape()), generator=torch.Generator().manual_seed(args.seed))
        kw = {"prompt": b["prompt"] if cfg.prompts else None, "noise": noise,
              "num_inference_steps": args.num_inference_steps}  # fmt: skip
        state = b["state"] if cfg.state_dim else None
        start = time.time()
        preds = {"model": open_loop(model, b["history_images"], state, b["actions"], kw)}
        seconds += time.time() - start
        preds["zero actions"] = open_loop(
            model, b["history_images"], state, torch.zeros_like(b["actions"]), kw
        )
        preds["repeat last"] = b["history_images"][:, -1:].expand_as(real)
        with torch.no_grad():
            preds["vae recon"] = model.decode(model.encode(real)).cpu()
        for row, pred in preds.items():
            psnr, ssim = frame_metrics(pred, real)
            for task in set(sample_task[part.numpy()]):
                mask = torch.from_numpy(sample_task[part.numpy()] == task)
                scores[row][f"{task}/psnr"].append(psnr[mask])
                scores[row][f"{task}/ssim"].append(ssim[mask])
                scores[row]["all/psnr"].append(psnr[mask])
                scores[row]["all/ssim"].append(ssim[mask])

    names = sorted({key.split("/")[0] for key in scores["model"]} - {"all"}) + ["all"]
    print(f"\n{'task':<26}" + "".join(f"{r:>18}" for r in ROWS))
    print(f"{'':<26}" + "".join(f"{'PSNR dB  SSIM':>18}" for _ in ROWS))
    for name in names:
        cells = []
        for row in ROWS:
            psnr = torch.cat(scores[row][f"{name}/psnr"]).mean()
            ssim = torch.cat(scores[row][f"{name}/ssim"]).mean()
            cells.append(f"{psnr:.2f}  {ssim:.3f}")
        print(f"{name:<26}" + "".join(f"{c:>18}" for c in cells))
    print(f"\nmodel imagination: {k * len(chosen) / seconds:.1f} chunks/s on {args.device} "
          f"(batch {args.batch}, {args.num_inference_steps or cfg.num_inference_steps} denoising steps)")  # fmt: skip


if __name__ == "__main__":
    main()
