"""``python -m toolkits.episodes.lerobot export|import``: the converter from the command line."""

from __future__ import annotations

import argparse

from toolkits.base.cli import tool_prog
from toolkits.episodes.lerobot.export import export_lerobot
from toolkits.episodes.lerobot.layout import CODEBASE_VERSION, PIX_FMTS
from toolkits.episodes.lerobot.load import import_lerobot


def main(argv: list[str] | None = None) -> int:
    """``export`` or ``import`` from the command line; bad input ends with one line naming it."""
    p = argparse.ArgumentParser(
        prog=tool_prog("toolkits.episodes.lerobot"),
        description="LeRobot v3.0 datasets from and to the project's episode format.",
    )
    sub = p.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("export", help="episode dataset -> LeRobot v3.0 dataset")
    ex.add_argument("--data", required=True, help="episode dataset (index.json + episodes/)")
    ex.add_argument("--out", required=True, help="new directory for the LeRobot dataset")
    ex.add_argument("--fps", type=int, default=80, help="frames per second (Meta-World steps at 80 Hz)")
    ex.add_argument("--robot-type", default="sawyer")
    ex.add_argument("--crf", type=int, default=18, help="h264 quality: 0 lossless .. 51 worst")
    ex.add_argument("--pix-fmt", default="yuv420p", choices=PIX_FMTS, help="yuv444p keeps full colour detail")
    ex.add_argument("--gop", type=int, default=2, help="keyframe interval (small: fast random access)")
    ex.add_argument("--preset", default="medium", help="libx264 speed preset (ultrafast .. veryslow)")
    ex.add_argument("--chunks-size", type=int, default=1000, help="files per chunk folder")
    ex.add_argument("--data-file-mb", type=float, default=100, help="parquet file size before a new file")
    ex.add_argument("--video-file-mb", type=float, default=200, help="mp4 file size before a new file")
    im = sub.add_parser("import", help="LeRobot v3.0 dataset -> episode dataset")
    im.add_argument(
        "--data", required=True, help="LeRobot v3.0 dataset folder (meta/info.json, data/, videos/)"
    )
    im.add_argument("--out", required=True, help="new directory for the episode dataset")
    args = p.parse_args(argv)
    try:
        if args.command == "export":
            info = export_lerobot(
                args.data,
                args.out,
                fps=args.fps,
                robot_type=args.robot_type,
                crf=args.crf,
                pix_fmt=args.pix_fmt,
                gop=args.gop,
                preset=args.preset,
                chunks_size=args.chunks_size,
                data_file_mb=args.data_file_mb,
                video_file_mb=args.video_file_mb,
            )
            print(
                f"wrote {info['total_episodes']} episodes ({info['total_frames']} frames, "
                f"{info['total_tasks']} tasks) of {args.data} to {args.out} (LeRobot {CODEBASE_VERSION})"
            )
        else:
            n = import_lerobot(args.data, args.out)
            print(f"wrote {n} episodes of {args.data} to {args.out}")
    except (ValueError, FileExistsError, FileNotFoundError) as err:
        raise SystemExit(f"error: {err}") from None
    return 0
