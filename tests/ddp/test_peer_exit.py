"""A rank that dies first, for real: torchrun, 2 CPU processes, gloo.

Rank 1 raises in its second step while rank 0 already waits for it in the gradient
all-reduce; rank 0 then fails with gloo's "Connection closed by peer". ddp-doctor must
not blame the model for that: the first cause is `peer_exited_first`, whose diagnostic
(`read_first_rank_error`) says to read the first rank's own error. Its snippet is run as
printed: `--log-dir logs --tee 3` keeps every rank's output where its glob says, and
`ddp-doctor triage` on those files gives the same diagnosis.
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import harness  # noqa: E402

harness.need_torch()

from matrix import ddp_doctor_json  # noqa: E402

pytestmark = pytest.mark.ddp
TIMEOUT = 180

JOB = """\
import time
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DistributedDataParallel(torch.nn.Linear(8, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(4, 8)
    if rank == 1 and step == 1:
        time.sleep(1.0)  # rank 0 is already waiting in the gradient all-reduce
        raise ValueError("bad sample in batch 1: image has 4 channels")
    model(x).sum().backward()
    optimizer.step()
    optimizer.zero_grad()
dist.destroy_process_group()
"""
PEER_GONE = ("Connection closed by peer", "Connection reset by peer")


def _launch(workdir: Path) -> str:
    """The job's whole console output, launched as the fix's snippet says."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("TORCH_DISTRIBUTED_DEBUG", None)
    argv = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2"]
    argv += ["--master_port", str(harness.free_port()), "--log-dir", "logs", "--tee", "3"]
    done = subprocess.run(
        [*argv, "train.py"],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode != 0, "the job was meant to fail"
    return done.stdout + done.stderr


def test_a_rank_that_died_first_is_blamed_not_the_model(tmp_path):
    (tmp_path / "train.py").write_text(JOB, encoding="utf-8")
    output = _launch(tmp_path)
    if not any(text in output for text in PEER_GONE):
        # the launcher may stop rank 0 before it prints: once more, in a fresh folder
        workdir = tmp_path / "again"
        workdir.mkdir()
        (workdir / "train.py").write_text(JOB, encoding="utf-8")
        tmp_path, output = workdir, _launch(workdir)
    assert any(text in output for text in PEER_GONE), output[-3000:]
    assert "ValueError: bad sample in batch 1" in output

    pasted = tmp_path / "console.txt"
    pasted.write_text(output, encoding="utf-8")
    for lang in ("en", "zh"):
        doc = ddp_doctor_json(["triage", str(pasted)], lang)
        assert doc["family"] == "collective_timeout"
        assert doc["causes"][0]["id"] == "peer_exited_first", doc["causes"][:3]
        assert [d["id"] for d in doc["diagnostics"]][:1] == ["read_first_rank_error"]
        assert doc["fixes"] == [], "no fix is proven while the first rank's error is unknown"
        first = doc["findings"][0]["other_rank_error"]
        assert first["rank"] == 1 and first["text"].startswith("ValueError: bad sample"), first

    # the snippet's glob finds every rank's log, and triage on them says the same
    logs = sorted(glob.glob(str(tmp_path / "logs/*/attempt_*/*/stderr.log")))
    assert len(logs) == 2, logs
    doc = ddp_doctor_json(["triage", *logs])
    assert doc["causes"][0]["id"] == "peer_exited_first"
    assert any("Traceback" in Path(log).read_text(encoding="utf-8") for log in logs)
