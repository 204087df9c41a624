"""The DCP -> state dict converter: directory or file output, global_step dir or actor dir input. Its
``main`` runs in this process (a fresh Python costs about 5 s of imports); the script's own exit code and
one-line error are checked once in a subprocess, and on a real job's checkpoint in
tests/runtime/test_runner_metaworld.py."""

import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict

from toolkits.ckpt_convertor.convert_dcp_to_state_dict import main

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "toolkits" / "ckpt_convertor" / "convert_dcp_to_state_dict.py"


@pytest.fixture()
def checkpoint(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    opt = torch.optim.AdamW(model.parameters())
    model(torch.randn(5, 3)).sum().backward()
    opt.step()
    msd, osd = get_state_dict(model, opt)
    step = tmp_path / "global_step_2"
    dcp.save({"model": msd, "optim": osd, "scheduler": {"last_epoch": 2}}, checkpoint_id=str(step / "actor"))
    return model, step


@pytest.mark.parametrize("use_actor_dir", [False, True])
@pytest.mark.parametrize("output", ["file.pt", "outdir"])
def test_convert_writes_loadable_state_dict(checkpoint, tmp_path, use_actor_dir, output):
    model, step = checkpoint
    src = step / "actor" if use_actor_dir else step
    out = tmp_path / output
    assert main(["--dcp_path", str(src), "--output_path", str(out)]) == 0
    written = out if output.endswith(".pt") else out / "model_state_dict.pt"
    state = torch.load(written, weights_only=True)
    fresh = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    fresh.load_state_dict(state)  # strict: every key present, none extra
    for a, b in zip(fresh.parameters(), model.parameters(), strict=True):
        assert torch.equal(a, b)


def test_convert_missing_checkpoint_is_one_line_error(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--dcp_path",
            str(tmp_path / "nope"),
            "--output_path",
            str(tmp_path / "x.pt"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "--dcp_path=" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("damaged", ["__0_0.distcp", ".metadata"])
def test_convert_truncated_checkpoint_is_one_line_error_naming_the_file(
    checkpoint, tmp_path, damaged, capsys
):
    _, step = checkpoint
    path = step / "actor" / damaged
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    assert main(["--dcp_path", str(step), "--output_path", str(tmp_path / "x.pt")]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "x.pt").exists()
