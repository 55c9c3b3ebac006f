"""`ddp-doctor run -- COMMAND`: real child processes, real pipes, real signals; no mocks."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import select
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers import FIXTURES, ROOT

PYTHON = sys.executable
CONSOLE_SCRIPT = Path(sys.executable).parent / "ddp-doctor"
# the installed console script is what users run; `python -m ddp_doctor` when not installed
WRAPPER = [str(CONSOLE_SCRIPT)] if CONSOLE_SCRIPT.exists() else [PYTHON, "-m", "ddp_doctor"]
HANG_GUARD = 120  # seconds; only so a broken wrapper fails the test instead of hanging it
FLAG_ON_ERROR = FIXTURES / "versions" / "torch_1_10_flag_on.txt"
UNUSED_FLAG_WARNING = (
    "[W reducer.cpp:1360] Warning: find_unused_parameters=True was specified in DDP "
    "constructor, but did not find any unused parameters in the forward pass. This flag "
    "results in an extra traversal of the autograd graph every iteration,  which can "
    "adversely affect performance. (function operator())\n"
)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TORCH_DISTRIBUTED_DEBUG",)}
    env.pop("DDP_DOCTOR_LANG", None)
    env.pop("PYTHONUNBUFFERED", None)
    env.update(extra)
    return env


def wrap(*command: str, options=("--lang", "en"), env=None, timeout=HANG_GUARD, **kw):
    """`ddp-doctor run [options] -- command...`, output captured as bytes."""
    return subprocess.run(
        [*WRAPPER, "run", *options, "--", *command],
        capture_output=True,
        env=env or _env(),
        cwd=ROOT,
        timeout=timeout,
        **kw,
    )


def py(code: str) -> list[str]:
    return [PYTHON, "-c", textwrap.dedent(code)]


def _stand_in_ddp_death(path: Path = FLAG_ON_ERROR) -> list[str]:
    """A job that prints a step line, then a captured real DDP error, and dies."""
    return py(
        f"""
        import sys
        print("rank 0 step 0 loss 0.5")
        sys.stderr.write(open({str(path)!r}, encoding="utf-8").read())
        sys.exit(1)
        """
    )


# ---------------------------------------------------------------------------- the real job


def _require_torch() -> None:
    if importlib.util.find_spec("torch") is None:
        if os.environ.get("CI"):
            pytest.fail("torch is not installed, and CI must run the real DDP tests")
        pytest.skip("torch is not installed")


@pytest.mark.ddp
def test_real_two_process_job_with_an_unused_module(tmp_path):
    _require_torch()
    report = tmp_path / "report.json"
    result = wrap(
        PYTHON,
        "tests/ddp/run_scenario.py",
        "--scenario",
        "unused_module",
        options=("--lang", "en", "--report", str(report)),
    )
    out = result.stdout.decode()
    err = result.stderr.decode()
    assert result.returncode == 1, err[-3000:]
    # the job's own output went through, to the same streams
    assert "rank 0 step 0 loss" in out and "rank 1 step 0 loss" in out
    assert "ddp-doctor" not in out
    error_at = err.index("Expected to have finished reduction in the prior iteration")
    # INFO, set by the wrapper, made PyTorch name the parameters
    names_at = err.index("Parameters which did not receive grad for rank")
    assert "unused.weight" in err[names_at : names_at + 200]
    # the diagnosis comes after the job's output and names the module
    heading_at = err.index("# ddp-doctor diagnosis")
    assert heading_at > error_at
    diagnosis = err[heading_at:]
    assert "`unused`" in diagnosis
    assert "model.unused" in diagnosis
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["family"] == "unfinished_reduction"
    assert "unused" in {m for f in data["findings"] for m in f["unused_modules"]}
    assert data["run"]["exit_code"] == 1


# ---------------------------------------------------------------------------- diagnosis


def test_a_ddp_death_is_diagnosed_after_the_jobs_output():
    result = wrap(*_stand_in_ddp_death())
    err = result.stderr.decode()
    assert result.returncode == 1
    assert result.stdout == b"rank 0 step 0 loss 0.5\n"
    original = FLAG_ON_ERROR.read_bytes()
    assert result.stderr.startswith(original)
    assert err[len(original.decode()) :].lstrip().startswith("# ddp-doctor diagnosis")
    assert "Traceback" not in err[len(original.decode()) :]


def test_json_on_stdout_and_report_file_in_chinese(tmp_path):
    report = tmp_path / "report.json"
    result = wrap(
        *_stand_in_ddp_death(), options=("--lang", "zh", "--json", "--report", str(report))
    )
    assert result.returncode == 1
    # stdout holds the one JSON document; the job's own stdout went to stderr, before its error
    printed = json.loads(result.stdout)
    assert result.stderr.startswith(b"rank 0 step 0 loss 0.5\n" + FLAG_ON_ERROR.read_bytes())
    written = json.loads(report.read_text(encoding="utf-8"))
    assert printed == written
    assert written["lang"] == "zh"
    assert written["family"] == "unfinished_reduction"
    assert written["findings"][0]["unused_parameter_indices"] == [158, 159, 160, 161]
    assert written["run"]["command"][0] == PYTHON


def test_the_report_is_written_for_a_clean_run_too(tmp_path):
    report = tmp_path / "report.json"
    result = wrap(*py("print('ok')"), options=("--lang", "en", "--report", str(report)))
    assert (result.returncode, result.stdout, result.stderr) == (0, b"ok\n", b"")
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["status"] == "no_known_error"
    assert data["run"]["exit_code"] == 0


@pytest.mark.parametrize("where", ["missing", "read-only"])
def test_an_unwritable_report_is_one_line_and_keeps_the_exit_code(tmp_path, where):
    directory = tmp_path / "reports"
    if where == "read-only":
        if os.geteuid() == 0:
            pytest.skip("root writes into read-only directories")
        directory.mkdir()
        directory.chmod(0o500)
    path = directory / "report.json"
    try:
        result = wrap(*_stand_in_ddp_death(), options=("--lang", "en", "--report", str(path)))
    finally:
        if directory.exists():
            directory.chmod(0o700)
    err = result.stderr.decode()
    assert result.returncode == 1
    lines = [line for line in err.splitlines() if "cannot write the report" in line]
    assert lines == [f"ddp-doctor: cannot write the report to {path}: " + lines[0].split(": ")[-1]]
    assert "Traceback" not in err[len(FLAG_ON_ERROR.read_text()) :]
    assert "# ddp-doctor diagnosis" in err  # the diagnosis itself still printed


def test_an_unknown_death_gets_one_line():
    result = wrap(
        *py("import sys; print('step 1'); sys.stderr.write('CUDA out of memory\\n'); sys.exit(3)")
    )
    assert result.returncode == 3
    assert result.stdout == b"step 1\n"
    assert result.stderr.decode().splitlines() == [
        "CUDA out of memory",
        "ddp-doctor: the job exited with code 3; ddp-doctor found no DDP error it knows in its output",
    ]


def test_the_unused_flag_warning_on_a_clean_run_gets_a_one_line_tip():
    code = f"import sys; sys.stderr.write({UNUSED_FLAG_WARNING!r}); print('done')"
    result = wrap(*py(code))
    assert result.returncode == 0
    assert result.stdout == b"done\n"
    lines = result.stderr.decode().splitlines()
    assert lines[0] == UNUSED_FLAG_WARNING.rstrip("\n")
    assert len(lines) == 2 and lines[1].startswith("ddp-doctor: tip: ")
    assert "`find_unused_parameters=True`" in lines[1]


# ---------------------------------------------------------------------------- pass-through


CLEAN_JOB = r"""
import os, sys
out, err = sys.stdout.buffer, sys.stderr.buffer
out.write(b"\x1b[32mgreen\x1b[0m line\n")
for i in range(5):
    err.write(b"\r  %d%% |%s|" % (i * 25, b"#" * i))
    err.flush()
err.write(b"\n")
out.write(b"not utf-8: \xff\xfe, no newline at the end")
"""


def test_a_clean_job_is_passed_through_byte_for_byte():
    direct = subprocess.run(py(CLEAN_JOB), capture_output=True, timeout=HANG_GUARD)
    wrapped = wrap(*py(CLEAN_JOB))
    assert wrapped.returncode == 0
    assert wrapped.stdout == direct.stdout
    assert wrapped.stderr == direct.stderr  # nothing extra: not even a newline


def test_a_partial_line_is_passed_on_before_the_job_ends():
    """The wrapper does not wait for newlines: a prompt shows while the job waits for input
    (and the job reads the terminal's stdin through the wrapper)."""
    job = py(
        """
        import sys
        sys.stdout.write("answer? ")
        sys.stdout.flush()
        print("got " + sys.stdin.readline().strip())
        """
    )
    wrapper = subprocess.Popen(
        [*WRAPPER, "run", "--", *job],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
        cwd=ROOT,
    )
    try:
        seen = _read_until(wrapper.stdout, b"answer? ")
        assert seen == b"answer? "
        wrapper.stdin.write(b"42\n")
        wrapper.stdin.close()
        rest = wrapper.stdout.read()
        assert wrapper.wait(HANG_GUARD) == 0
        assert rest == b"got 42\n"
    finally:
        wrapper.kill()
        wrapper.wait()


def _read_until(pipe, wanted: bytes) -> bytes:
    data = b""
    deadline = time.monotonic() + HANG_GUARD
    while wanted not in data:
        ready, _, _ = select.select([pipe], [], [], max(0.0, deadline - time.monotonic()))
        assert ready, f"no {wanted!r} from the wrapper; got {data!r}"
        chunk = os.read(pipe.fileno(), 4096)
        assert chunk, f"the wrapper closed its output early; got {data!r}"
        data += chunk
    return data


# ---------------------------------------------------------------------------- exit codes


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("raise SystemExit(3)", 3),
        ("raise SystemExit(1)", 1),
        ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", 128 + 9),
        ("import os, signal; os.kill(os.getpid(), signal.SIGTERM)", 128 + 15),
    ],
)
def test_the_jobs_exit_code_is_passed_through(code, expected):
    assert wrap(*py(code)).returncode == expected


def test_a_missing_command_exits_127_with_a_message():
    result = wrap("no-such-launcher-for-ddp-doctor", "--nproc_per_node=2")
    err = result.stderr.decode()
    assert result.returncode == 127
    assert err == "ddp-doctor: command not found: no-such-launcher-for-ddp-doctor\n"


def test_a_missing_command_in_chinese():
    result = wrap("no-such-launcher-for-ddp-doctor", options=("--lang", "zh"))
    assert result.returncode == 127
    assert result.stderr.decode() == "ddp-doctor: 找不到命令：no-such-launcher-for-ddp-doctor\n"


def test_a_file_that_is_not_executable_exits_126(tmp_path):
    script = tmp_path / "train.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o644)
    result = wrap(str(script))
    err = result.stderr.decode()
    assert result.returncode == 126
    assert err.startswith(f"ddp-doctor: cannot run {script}: ")
    assert err.count("\n") == 1 and "Traceback" not in err


def test_no_command_is_a_usage_error():
    result = subprocess.run([*WRAPPER, "run", "--"], capture_output=True, timeout=HANG_GUARD)
    assert result.returncode == 2
    assert b"give the command to run after --" in result.stderr


# ---------------------------------------------------------------------------- environment


SHOW_ENV = "import os; print(os.environ['TORCH_DISTRIBUTED_DEBUG'], os.environ['PYTHONUNBUFFERED'])"


def test_info_debugging_and_unbuffered_output_are_set_silently():
    result = wrap(*py(SHOW_ENV))
    assert (result.returncode, result.stdout, result.stderr) == (0, b"INFO 1\n", b"")


@pytest.mark.parametrize(
    ("value", "note"),
    [
        ("OFF", "keeping your TORCH_DISTRIBUTED_DEBUG=OFF; DDP errors will give parameter"),
        ("DETAIL", "keeping your TORCH_DISTRIBUTED_DEBUG=DETAIL; INFO already names"),
        ("INFO", "keeping your TORCH_DISTRIBUTED_DEBUG=INFO"),
    ],
)
def test_the_users_own_debug_level_is_kept_and_reported(value, note):
    result = wrap(*py(SHOW_ENV), env=_env(TORCH_DISTRIBUTED_DEBUG=value))
    assert result.stdout == f"{value} 1\n".encode()
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"ddp-doctor: {note}")


# ---------------------------------------------------------------------------- signals


SLEEPER = """
import os, time
print("ready", os.getpid(), flush=True)
time.sleep(600)
"""

STUBBORN = """
import os, signal, time
signal.signal(signal.SIGINT, lambda *a: print("saving a checkpoint", flush=True))
print("ready", os.getpid(), flush=True)
time.sleep(600)
time.sleep(600)
"""


@contextlib.contextmanager
def _wrapped(job: str):
    """`ddp-doctor run` on a job that prints its pid first: (the wrapper, the job's pid); both
    are gone when the test ends, whatever it asserted."""
    wrapper = subprocess.Popen(
        [*WRAPPER, "run", "--lang", "en", "--", *py(job)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
        cwd=ROOT,
    )
    line = _read_until(wrapper.stdout, b"\n")
    child = int(line.split()[1])
    try:
        yield wrapper, child
    finally:
        wrapper.kill()
        wrapper.wait()
        if not _gone(child):
            os.kill(child, signal.SIGKILL)


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")  # a zombie is dead, waiting for init to reap it


def test_ctrl_c_is_passed_to_the_job_and_exits_130():
    with _wrapped(SLEEPER) as (wrapper, child):
        wrapper.send_signal(signal.SIGINT)
        assert wrapper.wait(HANG_GUARD) == 130
        err = wrapper.stderr.read().decode()
        assert "passed Ctrl-C to the job" in err
        assert "KeyboardInterrupt" in err  # the job itself got the Ctrl-C
        assert "Traceback" not in err.split("KeyboardInterrupt")[-1]
        assert _gone(child)


def test_a_second_ctrl_c_stops_a_job_that_ignores_the_first():
    with _wrapped(STUBBORN) as (wrapper, child):
        wrapper.send_signal(signal.SIGINT)
        _read_until(wrapper.stdout, b"saving a checkpoint")  # the job got the first one
        wrapper.send_signal(signal.SIGINT)
        assert wrapper.wait(HANG_GUARD) == 130
        assert "sending SIGTERM" in wrapper.stderr.read().decode()
        assert _gone(child)


def test_sigterm_to_the_wrapper_is_passed_on():
    with _wrapped(SLEEPER) as (wrapper, child):
        wrapper.send_signal(signal.SIGTERM)
        assert wrapper.wait(HANG_GUARD) == 128 + 15
        assert _gone(child)


def test_what_was_learned_is_still_printed_after_ctrl_c():
    job = f"""
    import os, sys, time
    sys.stderr.write(open({str(FLAG_ON_ERROR)!r}, encoding="utf-8").read())
    print("ready", os.getpid(), flush=True)
    time.sleep(600)
    """
    with _wrapped(textwrap.dedent(job)) as (wrapper, child):
        wrapper.send_signal(signal.SIGINT)
        assert wrapper.wait(HANG_GUARD) == 130
        assert "# ddp-doctor diagnosis" in wrapper.stderr.read().decode()


# ---------------------------------------------------------------------------- memory


LOG_MEGABYTES = 200
MEMORY_BOUND_MB = 150

# Run in a fresh interpreter so the measure sees only the wrapper and its job, not the
# other processes this test session has waited for (a DDP job's RSS is far larger).
MEASURE = """
import resource, subprocess, sys
code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode
print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""

LONG_LOG = f"""
import sys
out = sys.stdout.buffer
bar = b"".join(b"\\r epoch 1 |%-50s| %d/1000 loss 0.%04d" % (b"#" * (i // 20), i, i) for i in range(1000))
block = (bar + b"\\n") * (1024 * 1024 // (len(bar) + 1))
written = 0
while written < {LOG_MEGABYTES} * 1024 * 1024:
    out.write(block)
    written += len(block)
out.flush()
"""


def test_a_long_log_does_not_grow_the_wrappers_memory():
    result = subprocess.run(
        [PYTHON, "-c", MEASURE, *WRAPPER, "run", "--", *py(LONG_LOG)],
        capture_output=True,
        env=_env(),
        cwd=ROOT,
        timeout=600,
    )
    code, max_rss_kb = map(int, result.stdout.split())
    assert code == 0, result.stderr.decode()[-2000:]
    assert max_rss_kb < MEMORY_BOUND_MB * 1024, f"max RSS {max_rss_kb // 1024} MB"


# like `yes`: default SIGPIPE handling (Python itself would raise BrokenPipeError, exit 1)
YES = """
import signal, sys
signal.signal(signal.SIGPIPE, signal.SIG_DFL)
while True:
    sys.stdout.write("y" * 100 + "\\n")
"""


def test_a_reader_that_leaves_ends_the_job_as_without_the_wrapper():
    """`ddp-doctor run -- job | head`: the job meets the broken pipe (SIGPIPE, 141)."""
    wrapper = subprocess.Popen(
        [*WRAPPER, "run", "--", *py(YES)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
        cwd=ROOT,
    )
    try:
        _read_until(wrapper.stdout, b"y\n")
        wrapper.stdout.close()
        assert wrapper.wait(HANG_GUARD) == 128 + signal.SIGPIPE
        assert wrapper.stderr.read() == b""  # nothing to diagnose: the user stopped reading
    finally:
        wrapper.kill()
        wrapper.wait()


# ---------------------------------------------------------------------------- every signal


NOTICED = """
import os, signal, sys, time
seen = []
def note(signum, frame):
    seen.append(signal.Signals(signum).name)
    print("got", seen[-1], flush=True)
signal.signal(signal.SIGUSR1, note)
signal.signal(signal.SIGUSR2, note)
print("ready", os.getpid(), flush=True)
while "SIGUSR2" not in seen:
    time.sleep(0.05)
print("checkpoint saved, carrying on", flush=True)
"""


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return "X"


def _wait_for(predicate, what: str) -> None:
    deadline = time.monotonic() + HANG_GUARD
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_sigusr1_and_sigusr2_reach_the_job_which_keeps_running():
    """Slurm's pre-emption notice: the job saves and goes on; the exit code is its own."""
    with _wrapped(NOTICED) as (wrapper, child):
        wrapper.send_signal(signal.SIGUSR1)
        _read_until(wrapper.stdout, b"got SIGUSR1\n")
        wrapper.send_signal(signal.SIGUSR2)
        assert wrapper.wait(HANG_GUARD) == 0
        assert wrapper.stdout.read() == b"got SIGUSR2\ncheckpoint saved, carrying on\n"
        err = wrapper.stderr.read().decode()
        assert "passed SIGUSR1 to the job" in err and "passed SIGUSR2 to the job" in err


def test_sigquit_is_passed_on_like_the_other_stop_signals():
    with _wrapped(SLEEPER) as (wrapper, child):
        wrapper.send_signal(signal.SIGQUIT)
        assert wrapper.wait(HANG_GUARD) == 128 + signal.SIGQUIT
        assert "passed SIGQUIT to the job" in wrapper.stderr.read().decode()
        assert _gone(child)


def test_a_wrapper_killed_outright_does_not_orphan_the_job():
    with _wrapped(SLEEPER) as (wrapper, child):
        wrapper.send_signal(signal.SIGKILL)  # cannot be caught: the watchdog stops the job
        wrapper.wait(HANG_GUARD)
        _wait_for(lambda: _gone(child), "the job outlived its killed wrapper")


def test_ctrl_z_stops_the_job_too_and_fg_continues_both():
    with _wrapped(NOTICED) as (wrapper, child):
        wrapper.send_signal(signal.SIGTSTP)
        _wait_for(lambda: _state(child) == "T", "the job kept running while the wrapper stopped")
        _wait_for(lambda: _state(wrapper.pid) == "T", "the wrapper did not stop")
        wrapper.send_signal(signal.SIGCONT)
        _wait_for(lambda: _state(child) != "T", "the job was not continued")
        wrapper.send_signal(signal.SIGUSR2)  # still connected: ends the job normally
        assert wrapper.wait(HANG_GUARD) == 0


INTERLEAVED = """
import sys
for i in range(400):
    stream = sys.stdout if i % 2 else sys.stderr
    stream.write(f"{i}\\n")
    stream.flush()
"""


def test_stdout_and_stderr_into_one_file_keep_the_jobs_order(tmp_path):
    log = tmp_path / "job.log"
    with open(log, "wb") as handle:
        result = subprocess.run(
            [*WRAPPER, "run", "--lang", "en", "--", *py(INTERLEAVED)],
            stdout=handle,
            stderr=subprocess.STDOUT,  # `> job.log 2>&1`
            env=_env(),
            cwd=ROOT,
            timeout=HANG_GUARD,
        )
    assert result.returncode == 0
    assert log.read_text().split() == [str(i) for i in range(400)]
