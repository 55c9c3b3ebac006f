"""The Lightning and Hugging Face Trainer spellings of `find_unused_parameters`, run for real:
2 CPU processes, gloo, a model with a module that is never called (tests/ddp/frameworks/).

With the flag's spelling from rules/fixes.yaml the job finishes and both ranks' parameters
equal a single-process full-batch run; with the flag off it dies of the unfinished-reduction
error. The HF Trainer's default (flag unset, no gradient checkpointing) turns it on.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
JOBS = HERE / "frameworks"
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(JOBS))

import harness  # noqa: E402

torch = harness.need_torch()

pytestmark = pytest.mark.ddp
TIMEOUT = 300
# what each framework says when the flag is off: Lightning catches DDP's error and raises
# its own text (measured with lightning 2.6.6), the Trainer lets DDP's through
ERROR_TEXT = {
    "lightning": "It looks like your LightningModule has parameters that were not used in "
    "producing the loss returned by training_step",
    "transformers": "Expected to have finished reduction in the prior iteration",
}


def _need(module: str) -> None:
    try:
        __import__(module)
    except ImportError:
        if os.environ.get("CI"):
            raise  # the [test] extra installs it: in CI a missing framework is a failure
        pytest.skip(f"{module} is not installed")


def _run(argv: list[str], out: str) -> tuple[int | None, str, dict]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "MASTER_ADDR": "127.0.0.1"}
    env["MASTER_PORT"] = str(harness.free_port())
    env.pop("TORCH_DISTRIBUTED_DEBUG", None)
    proc = subprocess.Popen(
        argv,
        cwd=JOBS,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        raw, _ = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        raw, _ = proc.communicate()
        return None, raw.decode(errors="replace"), {}
    params = {
        r: torch.load(Path(out) / f"rank{r}.pt")
        for r in (0, 1)
        if (Path(out) / f"rank{r}.pt").exists()
    }
    return proc.returncode, raw.decode(errors="replace"), params


def _lightning(strategy: str, out: str):
    return _run([sys.executable, "lightning_job.py", "--strategy", strategy, "--out", out], out)


def _hf(flag: str, out: str):
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2"]
    rdzv = ["--master_addr", "127.0.0.1", "--master_port", str(harness.free_port())]
    return _run([*torchrun, *rdzv, "hf_trainer_job.py", "--find-unused", flag, "--out", out], out)


CASES = {
    ("lightning", "ddp_find_unused_parameters_true"): "works",
    ("lightning", "ddp"): "error",  # Lightning 2.x: plain "ddp" has the flag off
    ("transformers", "true"): "works",
    ("transformers", "false"): "error",
    ("transformers", "default"): "works",  # unset: on unless gradient checkpointing is
}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    runners = {"lightning": _lightning, "transformers": _hf}
    wanted = []
    for framework, spelling in CASES:
        try:
            __import__(framework)
        except ImportError:
            continue
        wanted.append((framework, spelling))
    with ThreadPoolExecutor(2) as pool:
        futures = {
            key: pool.submit(runners[key[0]], key[1], str(tmp_path_factory.mktemp(key[0])))
            for key in wanted
        }
        return {key: f.result() for key, f in futures.items()}


@pytest.mark.parametrize(("framework", "spelling"), list(CASES), ids=lambda v: str(v))
def test_framework_spelling(framework, spelling, results):
    _need(framework)
    import common

    returncode, output, params = results[(framework, spelling)]
    if CASES[(framework, spelling)] == "error":
        assert returncode not in (0, None), output[-3000:]
        assert ERROR_TEXT[framework] in output, output[-3000:]
        return
    assert returncode == 0, output[-3000:]
    ref = common.reference()
    assert sorted(params) == [0, 1], output[-3000:]
    for rank, got in params.items():
        for name, want in ref.items():
            assert torch.allclose(got[name], want, atol=1e-5, rtol=0), (rank, name)
