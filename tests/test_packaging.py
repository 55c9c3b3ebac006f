"""Build the sdist and the wheel, install the wheel into a fresh venv without torch, run it.

What a user gets from `pip install ddp-doctor`: the rules must ship inside the package (the
run happens far from this checkout), the version must come from one place
(`ddp_doctor.__version__`), and nothing may need torch to triage a paste. The wheel is built
from the sdist, so a file missing from the sdist fails here too.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import ddp_doctor
import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "versions" / "torch_1_10_flag_on.txt"

pytestmark = pytest.mark.slow  # a build, a venv and an install: about a minute


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def venv(dist, tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("venv") / "env"
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, timeout=300)
    wheel = next(dist.glob("ddp_doctor-*.whl"))
    done = subprocess.run(
        [str(where / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return where


def _names_in_wheel(dist: Path) -> set[str]:
    with zipfile.ZipFile(next(dist.glob("ddp_doctor-*.whl"))) as wheel:
        return set(wheel.namelist())


def _names_in_sdist(dist: Path) -> set[str]:
    with tarfile.open(next(dist.glob("ddp_doctor-*.tar.gz"))) as sdist:
        return {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}


def test_wheel_carries_the_rules(dist):
    names = _names_in_wheel(dist)
    rules = sorted(p.relative_to(ROOT / "rules") for p in (ROOT / "rules").rglob("*.yaml"))
    assert rules
    for path in rules:
        assert f"ddp_doctor/rules/{path.as_posix()}" in names
    assert "ddp_doctor/rules/schema.json" in names
    # the import name is ddp_doctor; no generic top-level `wizard` package is installed
    assert "ddp_doctor/__init__.py" in names
    assert not any(name.startswith("wizard/") for name in names)


def test_sdist_carries_the_sources(dist):
    names = _names_in_sdist(dist)
    assert "pyproject.toml" in names
    assert "rules/signatures.yaml" in names
    assert "wizard/cli/main.py" in names


def _run(venv: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": str(cwd)}
    return subprocess.run(
        [str(venv / "bin" / "ddp-doctor"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
    )


def test_installed_wheel_has_no_torch(venv):
    done = subprocess.run([str(venv / "bin" / "python"), "-c", "import torch"], timeout=120)
    assert done.returncode != 0


def test_version_comes_from_one_place(venv, tmp_path):
    done = _run(venv, tmp_path, "--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"ddp-doctor {ddp_doctor.__version__}"


def test_triage_far_from_the_checkout(venv, tmp_path):
    paste = tmp_path / "error.txt"
    paste.write_bytes(FIXTURE.read_bytes())
    done = _run(venv, tmp_path, "triage", "--json", "error.txt")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["family"] == "unfinished_reduction"
    assert report["tool"]["version"] == ddp_doctor.__version__
    # and the rules came from the installed package, not from this checkout
    where = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import ddp_doctor.knowledge.kb as k; print(k.builtin_rules_dir())",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    ).stdout.strip()
    assert str(ROOT) not in where
    assert where.endswith("ddp_doctor/rules")


def test_chinese_markdown_from_the_wheel(venv, tmp_path):
    done = _run(venv, tmp_path, "triage", "--lang", "zh", "--format", "markdown", str(FIXTURE))
    assert done.returncode == 0, done.stderr
    assert "参数" in done.stdout
