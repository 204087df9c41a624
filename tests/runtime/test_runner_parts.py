"""Pieces of the runner that need no Ray: interval union, shard assignment, atomic checkpoint commit."""

import os

import pytest
import torch

from policy_and_value.runner.report import eval_summary, interval_union, output_paths, train_summary
from policy_and_value.runner.runner import EmbodiedRunner, Stream
from toolkits.base import checkpoint as ckpt


def test_interval_union_merges_overlaps_and_clips():
    assert interval_union([], 0, 10) == 0
    assert interval_union([(1, 3), (2, 4), (6, 7)], 0, 10) == pytest.approx(4.0)
    assert interval_union([(-5, 2), (9, 20)], 0, 10) == pytest.approx(3.0)
    assert interval_union([(3, 3), (5, 4)], 0, 10) == 0


def test_eval_summary_never_prints_nan():
    before, after = (
        {"eval/success_once": 0.25, "eval/return": 1.0},
        {"eval/success_once": 0.5, "eval/return": 2.0},
    )
    lines = eval_summary(before, after)
    assert "0.250 ->  0.500" in lines[1] and "before -> after" in lines[0]
    only_first = eval_summary(before, {})  # no evaluation after the first one
    assert "no evaluation ran after it" in only_first[0] and "nan" not in "".join(only_first)
    assert "0.250" in only_first[1]
    assert eval_summary({}, {}) == []


def test_output_paths_name_the_last_checkpoint_and_count_videos(tmp_path):
    log_dir = tmp_path / "run"
    (log_dir / "videos" / "eval").mkdir(parents=True)
    for name in ("a.mp4", "b.mp4", "notes.txt"):
        (log_dir / "videos" / "eval" / name).write_text("")
    lines = output_paths(
        str(log_dir), str(log_dir / "checkpoints" / "global_step_2"), str(tmp_path / "no_wm")
    )
    text = "\n".join(lines)
    assert f"tensorboard --logdir {log_dir / 'tensorboard'}" in text and "global_step_2" in text
    assert f"{log_dir / 'videos'} (2 mp4)" in text and "wm videos" not in text  # no prediction videos made
    no_checkpoint = output_paths(str(log_dir), None, str(tmp_path))  # (tmp_path's name may hold any word)
    assert not any(line.lstrip().startswith("checkpoint:") for line in no_checkpoint)


def test_train_summary_lists_each_task_over_the_steps_it_finished_episodes():
    recent = [
        {"env/success_once": 0.5, "env/reach-v3/success_once": 1.0, "env/push-v3/success_once": 0.0},
        {"env/success_once": 0.5, "env/reach-v3/success_once": 0.5},  # push-v3 finished no episode
    ]
    lines = train_summary(recent)
    assert "last 2 steps" in lines[0]
    assert [line.split() for line in lines[1:]] == [["push-v3", "0.000"], ["reach-v3", "0.750"]]
    assert train_summary([{"env/reach-v3/success_once": 1.0}]) == []  # one task: nothing to break down


class _Group:
    def __init__(self, n: int):
        self.world_size = n


@pytest.mark.parametrize("actor_ranks", [1, 2, 3, 6])
def test_shard_assignment_gives_every_rank_equal_columns(actor_ranks):
    runner = EmbodiedRunner.__new__(EmbodiedRunner)
    runner.actor = _Group(actor_ranks)
    keys = [(f"k{i}", Stream(i // 2, i % 2, i % 3, 3)) for i in range(4)]  # 12 columns over 4 streams
    plan = runner.shard_assignment(keys)
    assert len(plan) == actor_ranks
    per_rank = [sum(b - a for _, _, a, b in parts) for parts in plan]
    assert per_rank == [12 // actor_ranks] * actor_ranks
    covered = sorted((key, c) for parts in plan for key, _, a, b in parts for c in range(a, b))
    assert covered == sorted((f"k{i}", c) for i in range(4) for c in range(3))


def test_checkpoint_commit_is_atomic_and_updates_latest(tmp_path):
    final = ckpt.step_dir(str(tmp_path), 3)
    os.makedirs(os.path.dirname(final))
    tmp = ckpt.temp_dir_for(final)
    ckpt.save_runner_state(tmp, 3, {"rng": [1, 2, 3]})
    assert not os.path.exists(final)  # nothing under the final name until commit
    ckpt.commit(tmp, final)
    assert not os.path.exists(tmp)
    step, state = ckpt.load_runner_state(final)
    assert step == 3 and state == {"rng": [1, 2, 3]}
    assert open(os.path.join(os.path.dirname(final), "latest")).read().strip() == "global_step_3"
    # weights_only loading works on the file as written
    assert torch.load(os.path.join(final, ckpt.RUNNER_STATE), weights_only=True)["global_step"] == 3


def test_eval_videos_reach_tensorboard_as_animated_gifs(tmp_path):
    import imageio.v2 as imageio
    import numpy as np
    from tensorboard.backend.event_processing.event_accumulator import IMAGES, EventAccumulator

    from policy_and_value.envs.video import gif_bytes
    from toolkits.base.metric_logger import MetricLogger

    frames = [np.full((32, 48, 3), 20 * t, np.uint8) for t in range(6)]
    path = str(tmp_path / "rank0_env0_episode0.mp4")
    imageio.mimwrite(path, frames, fps=10, macro_block_size=1)
    gif, height, width = gif_bytes(path, fps=10)
    assert gif.startswith(b"GIF8") and (height, width) == (32, 48)
    logger = MetricLogger(str(tmp_path / "run"), ["tensorboard"], "p", "e", {})
    logger.log_videos([("rank0_env0_episode0", gif, height, width)], step=7)
    logger.close()
    events = EventAccumulator(str(tmp_path / "run" / "tensorboard"), size_guidance={IMAGES: 0})
    events.Reload()
    assert events.Tags()["images"] == ["eval/video/rank0_env0_episode0"]
    image = events.Images("eval/video/rank0_env0_episode0")[0]
    assert image.step == 7 and image.encoded_image_string.startswith(b"GIF8") and image.width == 48
