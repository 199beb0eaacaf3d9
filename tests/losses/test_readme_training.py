"""README "Use the loss in your training code" is copy-paste runnable: its two Python blocks run as
they are, the first in a fresh interpreter, the second (``train.py``) under ``torchrun`` with two
gloo processes on the CPU. Each must finish and print what it says it prints; the training must
lower the loss (the first block prints the losses of every epoch's batches)."""

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SECTION = "## Use the loss in your training code"


def _blocks():
    text = (ROOT / "README.md").read_text()
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def _env():
    path = os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}


def test_the_section_has_the_two_blocks_and_both_installs():
    blocks = _blocks()
    assert len(blocks) == 2
    for block in blocks:
        ast.parse(block)
    section = (ROOT / "README.md").read_text().split(SECTION, 1)[1].split("\n## ", 1)[0]
    assert "pip install ." in section and 'pip install -e ".[book,test]"' in section
    assert 'pip install --quiet -e ".[book,test]"' in (ROOT / "Makefile").read_text()


@pytest.mark.slow
def test_the_single_process_block_runs_and_learns(tmp_path):
    proc = subprocess.run([sys.executable, "-c", _blocks()[0]], cwd=tmp_path, env=_env(), capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    epochs = re.findall(r"epoch (\d): losses \[(.*?)\], tau ([0-9.]+)", proc.stdout)
    assert [e[0] for e in epochs] == ["0", "1", "2"], proc.stdout
    losses = [[float(v) for v in e[1].split(",")] for e in epochs]
    assert all(len(row) == 9 and row[-1] == 0.0 for row in losses)  # the single pair: exactly 0
    assert losses[-1][-2] < 0.8 * losses[0][0]  # the last full batch against the first
    assert float(epochs[-1][2]) != pytest.approx(0.07, abs=1e-4)  # the temperature was learned
    assert re.search(r"NT-Xent [0-9.]+, with labels [0-9.]+, SupCon [0-9.]+, hard negatives [0-9.]+, "
                     r"explicit negatives [0-9.]+", proc.stdout)


def test_the_torchrun_block_waits_at_a_barrier_before_the_teardown():
    # Without it, rank 1 sometimes aborted in gloo's teardown after printing the right result
    # (7 of 24 runs exited 1); every process must reach the barrier before the group is destroyed.
    block = _blocks()[1]
    assert block.index("dist.barrier()") < block.index("dist.destroy_process_group()")


@pytest.mark.slow
def test_the_torchrun_block_runs_on_two_gloo_processes(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(_blocks()[1])
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(script)]
    proc = subprocess.run(cmd, cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    match = re.search(r"2 processes, loss ([0-9.]+), tau ([0-9.]+)", proc.stdout)
    assert match, proc.stdout
    assert 0.0 < float(match.group(1)) < 4.85  # below chance, log(2 x 64) = 4.85
