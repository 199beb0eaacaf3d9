"""Stages as process groups with a time limit: a stage past its budget is stopped with every
process it started (a notebook's kernel too, which runs in a session of its own).

* :func:`run_limited` -- run a command in its own process group, output to a log, within a time;
* :func:`stop_group` -- SIGTERM to the group, then SIGKILL to it and to what was below it;
* :func:`fair_share` -- the time one of the remaining chapters may take.

Standard library only; Linux (``/proc``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from .machine import ROOT

__all__ = ["descendants", "fair_share", "run_limited", "stop_group", "tail"]


def _stat(pid) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def descendants(pid: int) -> list[tuple[int, str]]:
    """``[(pid, start time)]`` of the processes below ``pid`` (from /proc), also those in sessions
    of their own (a notebook's kernel is started in a new session)."""
    children: dict[int, list[tuple[int, str]]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        fields = _stat(stat.parent.name)
        if fields:
            children.setdefault(int(fields[1]), []).append((int(stat.parent.name), fields[19]))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child[0])
    return out


def _kill(procs, sig) -> None:
    """Signal each ``(pid, start time)`` that is still that same process (pids get reused)."""
    for pid, started in procs:
        fields = _stat(pid)
        if fields and fields[19] == started:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass


def stop_group(proc: subprocess.Popen, grace: float = 10.0) -> None:
    """SIGTERM to the process group (the CLI then shuts its kernel down); after ``grace``
    seconds, SIGKILL to the group and to every process that was below it."""
    below = descendants(proc.pid)
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    _kill(below, signal.SIGKILL)
    proc.wait()


def run_limited(cmd, *, env, timeout: float, log_path: Path, cwd: Path = ROOT) -> dict:
    """Run ``cmd`` in its own process group, output appended to ``log_path``; stop it after
    ``timeout`` seconds. Returns ``{status: passed|failed|timed out, rc, seconds, budget_s}``."""
    t0 = time.monotonic()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        log.write(f"$ {' '.join(map(str, cmd))}\n".encode())
        log.flush()
        proc = subprocess.Popen([str(c) for c in cmd], cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            rc = proc.wait(timeout=max(timeout, 0.1))
            status = "passed" if rc == 0 else "failed"
        except subprocess.TimeoutExpired:
            stop_group(proc)
            rc, status = None, "timed out"
    return {"status": status, "rc": rc, "seconds": round(time.monotonic() - t0, 1), "budget_s": round(timeout, 1)}


def fair_share(left_s: float, n_left: int, floor_s: float = 5.0) -> float:
    """The time one of ``n_left`` remaining items may take out of ``left_s`` (0 when too little)."""
    if n_left <= 0:
        return 0.0
    share = left_s / n_left
    return share if share >= floor_s else 0.0


def tail(path: Path, n_bytes: int) -> str:
    """The last ``n_bytes`` of a log file (saying so when earlier output was cut); '' if unreadable."""
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    text = data[-n_bytes:].decode("utf-8", "replace")
    return ("[... earlier output cut ...]\n" if len(data) > n_bytes else "") + text
