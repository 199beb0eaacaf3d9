"""The carried wheels: which distributions travel to the GPU machine, and the wheels themselves.

* :func:`carried_distributions` -- the notebook tool chain and the benchmark's peer, with every
  dependency the GPU machine lacks, at the versions installed here (the project's ``.venv``);
* :func:`download_wheels` -- ``make gpu-wheels``: those wheels for the GPU machine's interpreter;
* :func:`check_wheel_folder` -- two versions of one name, or a requirement nothing provides;
* :func:`wheel_from_installed` -- a wheel rebuilt from an installed distribution (the rehearsal
  downloads nothing).

Standard library at import time; :mod:`packaging` (on the GPU machine's image) inside functions.
"""

from __future__ import annotations

import base64
import hashlib
import re
import subprocess
import sys
import zipfile
from email.parser import Parser
from importlib import metadata
from pathlib import Path

from .machine import (
    CARRIED_ROOTS,
    CARRIED_WITHOUT_DEPS,
    DEVICE_PACKAGES,
    DEVICE_PLATFORMS,
    DEVICE_PYTHON,
    OPTIONAL_ROOTS,
    ROOT,
    canon,
    say,
)

__all__ = ["carried_distributions", "check_wheel_folder", "download_wheels", "marker_env", "requirements",
           "tree_bytes", "wheel_from_installed"]


def marker_env(python_version: str) -> dict:
    """The environment markers (PEP 508) of CPython ``python_version`` on x86-64 Linux."""
    return {"python_version": python_version, "python_full_version": f"{python_version}.0",
            "implementation_name": "cpython", "platform_python_implementation": "CPython",
            "sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64",
            "os_name": "posix", "extra": ""}


def requirements(dist, python_version: str):
    """The requirements (``packaging.requirements.Requirement``) an installed distribution declares
    for ``python_version``, without extras."""
    from packaging.requirements import Requirement  # on the GPU machine's image, not needed to import

    env = marker_env(python_version)
    for text in dist.requires or []:
        req = Requirement(text)
        if req.marker is None or req.marker.evaluate(env):
            yield req


def _roots(optional: bool) -> tuple[str, ...]:
    roots = CARRIED_ROOTS + tuple(CARRIED_WITHOUT_DEPS)
    for name in OPTIONAL_ROOTS:
        try:
            metadata.distribution(name)
            roots += (name,)
        except metadata.PackageNotFoundError:
            if optional:
                roots += (name,)  # and fail in carried_distributions, naming it
    return roots


def carried_distributions(python_version: str = DEVICE_PYTHON, *, optional: bool = True) -> list[tuple[str, str]]:
    """``[(name, version)]``: ``CARRIED_ROOTS``, ``CARRIED_WITHOUT_DEPS`` and ``OPTIONAL_ROOTS``
    (``optional=True``: required; ``False``: where installed) with every dependency (for
    ``python_version``) that ``DEVICE_PACKAGES`` lacks, at the versions installed in the running
    interpreter's environment.

    Raises:
        SystemExit: a needed distribution is not installed here (names the chain that needs it).
    """
    device = {canon(n) for n in DEVICE_PACKAGES}
    todo = [(name, ()) for name in _roots(optional)]
    found: dict[str, tuple[str, str]] = {}
    while todo:
        name, chain = todo.pop()
        key = canon(name)
        if key in found or key in device:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            raise SystemExit(f"{name} (needed by {' <- '.join(reversed(chain)) or 'the check'}) is not "
                             f"installed in {sys.prefix}; run `make install` (and `pip install -e .[bench]`)") from None
        found[key] = (dist.metadata["Name"], dist.version)
        if key in CARRIED_WITHOUT_DEPS:
            todo += [(dep, chain + (key,)) for dep in CARRIED_WITHOUT_DEPS[key]]
        else:
            todo += [(req.name, chain + (key,)) for req in requirements(dist, python_version)]
    return sorted(found.values(), key=lambda nv: canon(nv[0]))


def _wheel_metadata(folder: Path) -> tuple[dict, list[str]]:
    """``{canonical name: (wheel, METADATA message)}`` of a folder's wheels, and the names with two."""
    metas, problems = {}, []
    for whl in sorted(Path(folder).glob("*.whl")):
        with zipfile.ZipFile(whl) as z:
            meta_name = next(n for n in z.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n))
            meta = Parser().parsestr(z.read(meta_name).decode("utf-8"))
        key = canon(meta["Name"])
        if key in metas:
            problems.append(f"two wheels of {meta['Name']}: {metas[key][0].name} and {whl.name}")
        metas[key] = (whl, meta)
    return metas, problems


def check_wheel_folder(folder: Path, python_version: str = DEVICE_PYTHON) -> list[str]:
    """Problems with a folder of carried wheels: two versions of one name, or a requirement (for
    ``python_version``) that neither a carried wheel nor the device image provides (an empty list:
    none)."""
    from packaging.requirements import Requirement  # on the GPU machine's image, not needed to import

    env = marker_env(python_version)
    device = {canon(n) for n in DEVICE_PACKAGES}
    metas, problems = _wheel_metadata(folder)
    for key, (whl, meta) in metas.items():
        if key in CARRIED_WITHOUT_DEPS:
            needs = [Requirement(d) for d in CARRIED_WITHOUT_DEPS[key]]
        else:
            needs = [r for r in map(Requirement, meta.get_all("Requires-Dist") or [])
                     if r.marker is None or r.marker.evaluate(env)]
        for req in needs:
            name = canon(req.name)
            if name in metas:
                version = metas[name][1]["Version"]
                if req.specifier and not req.specifier.contains(version, prereleases=True):
                    problems.append(f"{whl.name} needs {req}, carried: {version}")
            elif name not in device:
                problems.append(f"{whl.name} needs {req}, which is neither carried nor on the GPU machine")
    return problems


def tree_bytes(root: Path = ROOT) -> int:
    """Bytes of the files git tracks (what travels to the GPU machine besides the carried folder);
    -1 without git."""
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return -1
    return sum((root / p).stat().st_size for p in out.decode().split("\0") if p and (root / p).is_file())


def download_wheels(dest: Path, python_version: str = DEVICE_PYTHON) -> int:
    """``make gpu-wheels``: download the carried set (:func:`carried_distributions`) for CPython
    ``python_version`` on x86-64 manylinux into ``dest``, drop other versions found there, and check
    the folder; returns the exit status (1: a problem, or wheels and tree above 60 MiB)."""
    dest = Path(dest).resolve()
    dest.mkdir(parents=True, exist_ok=True)
    wanted = carried_distributions(python_version)
    specs = [f"{name}=={version}" for name, version in wanted]
    keep = {(canon(n), v) for n, v in wanted}
    for whl in dest.glob("*.whl"):  # one version of each: two would stop the install there
        name, version = whl.name.split("-")[:2]
        if (canon(name), version) not in keep:
            whl.unlink()
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version",
           python_version, "--implementation", "cp", "-d", str(dest), "--progress-bar", "off"]
    for plat in DEVICE_PLATFORMS:
        cmd += ["--platform", plat]
    say(f"downloading {len(specs)} wheels for CPython {python_version} (x86-64 manylinux) into {dest}")
    subprocess.run(cmd + specs, check=True)
    problems = check_wheel_folder(dest, python_version)
    wheels = sorted(dest.glob("*.whl"))
    size, tree = sum(w.stat().st_size for w in wheels), tree_bytes()
    for w in wheels:
        say(f"  {w.stat().st_size / 2**20:7.2f} MiB  {w.name}")
    say(f"{len(wheels)} wheels, {size / 2**20:.1f} MiB; tracked tree {tree / 2**20:.1f} MiB; together "
        f"{(size + tree) / 2**20:.1f} MiB of the 64 MiB that may travel")
    for p in problems:
        say(f"problem: {p}")
    if size + tree > 60 * 2**20:
        say("problem: wheels and tree exceed 60 MiB (the limit is 64 MiB)")
        return 1
    return 1 if problems else 0


def _dist_info_dir(dist) -> str:
    for f in dist.files or []:
        if f.name == "METADATA" and f.parent.name.endswith(".dist-info"):
            return str(f.parent)
    raise ValueError(f"{dist.metadata['Name']}: no .dist-info in its RECORD")


def wheel_from_installed(dist, dest: Path) -> Path:
    """Rebuild a wheel from an installed distribution's files (its RECORD), for a rehearsal that
    may not download anything: the files inside site-packages, a fresh RECORD, the WHEEL tag.
    Returns the wheel's path in ``dest``."""
    info = _dist_info_dir(dist)
    wheel_meta = dist.read_text("WHEEL") or ""
    tags = [t.split("-") for t in re.findall(r"^Tag:\s*(\S+)", wheel_meta, flags=re.M)] or [["py3", "none", "any"]]
    # the compressed tag set: py2.py3-none-any, cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64
    tag = "-".join(".".join(dict.fromkeys(t[i] for t in tags)) for i in range(3))
    path = Path(dest) / f"{info[: -len('.dist-info')]}-{tag}.whl"
    skipped = {f"{info}/RECORD", f"{info}/INSTALLER", f"{info}/REQUESTED", f"{info}/direct_url.json"}
    rows = []
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        for f in dist.files:
            arc = f.as_posix()
            if arc.startswith("..") or "__pycache__" in f.parts or arc.endswith(".pyc") or arc in skipped:
                continue
            src = Path(f.locate())
            if not src.is_file():
                continue
            data = src.read_bytes()
            z.writestr(arc, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            rows.append(f"{arc},sha256={digest},{len(data)}")
        rows.append(f"{info}/RECORD,,")
        z.writestr(f"{info}/RECORD", "\n".join(rows) + "\n")
    return path
