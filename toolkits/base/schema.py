"""The base of every typed config (jobs, imitation, world-model and reward-model training)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    """Unknown keys are errors; values are validated on assignment too."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, strict=False)
