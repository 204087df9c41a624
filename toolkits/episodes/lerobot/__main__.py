"""Run the converter: ``python -m toolkits.episodes.lerobot export|import ...``."""

from toolkits.episodes.lerobot.cli import main

raise SystemExit(main())
