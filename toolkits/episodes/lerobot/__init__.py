"""LeRobot datasets (format v3.0: parquet + mp4 + ``meta/``) from and to the project's episode format.

    python -m toolkits.episodes.lerobot export --data data/mt10 --out data/mt10_lerobot [--fps 80]
    python -m toolkits.episodes.lerobot import --data data/mt10_lerobot --out data/mt10_back

Written without the ``lerobot`` package (its pins conflict with ours): pyarrow for the parquet files,
the ffmpeg bundled with imageio-ffmpeg for the videos (h264). An episode of T actions and T+1
observations becomes T+1 LeRobot frames; the last frame holds the final observation and repeats the
last action. On import, the last frame's action, ``next.reward`` and ``next.success`` are dropped, so
any LeRobot v3 episode of N frames becomes a project episode of N-1 actions. The full mapping is in
``toolkits/episodes/README.md``. ``layout`` holds the paths and names both directions share, ``export`` and
``load`` the two directions, ``cli`` the command line.
"""

from toolkits.episodes.lerobot.cli import main
from toolkits.episodes.lerobot.export import export_lerobot
from toolkits.episodes.lerobot.layout import CODEBASE_VERSION, LeRobotFormatError
from toolkits.episodes.lerobot.load import import_lerobot, read_info

__all__ = ["CODEBASE_VERSION", "LeRobotFormatError", "export_lerobot", "import_lerobot", "main", "read_info"]
