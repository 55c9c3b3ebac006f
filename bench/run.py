"""Benchmarks for ddp-doctor: start-up against a bare interpreter, big logs against grep.

    python bench/run.py                  # everything (start-up, then 100 MB and 1 GB logs)
    python bench/run.py startup --runs 40
    python bench/run.py biglog --sizes 100M,1G --keep-logs /tmp/ddp-logs

Every figure is compared with a baseline measured in the same run, interleaved with it, so
that a busy machine slows both alike: `python -c pass` for start-up, `grep -c` on the same
file for big logs. Results are printed as markdown tables (paste them into RESULTS.md).

Start-up is measured in a fresh venv with ddp-doctor installed from a wheel, as a user has
it: an editable install (`pip install -e .`) adds an import hook to every start, bare
`python -c pass` included, which would flatter the ratios. The venv borrows the
dependencies (rich, questionary, PyYAML) from the interpreter running this script through a
`.pth` file, so no download is needed. `--in-place` measures the running environment
instead.
"""

from __future__ import annotations

import argparse
import os
import select
import shutil
import signal
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PASTE = ROOT / "tests" / "fixtures" / "versions" / "torch_1_10_flag_on.txt"
ANCHOR = "Expected to have finished reduction"
_PROMPT_READY = b"\x1b[?2004h"  # "bracketed paste on"

sys.path.insert(0, str(HERE))
from make_log import parse_size, write_log  # noqa: E402

# ---------------------------------------------------------------------------- environment


class Env:
    """The interpreter and the `ddp-doctor` script to measure, and the environment for them."""

    def __init__(self, python: str, script: str, environ: dict[str, str]):
        self.python, self.script, self.environ = python, script, environ


def make_env(workdir: Path, in_place: bool) -> Env:
    environ = dict(os.environ)
    environ["XDG_CACHE_HOME"] = str(workdir / "cache")  # a cache of our own, filled on warm-up
    environ.pop("DDP_DOCTOR_NO_CACHE", None)
    environ.pop("DDP_DOCTOR_RULES", None)
    # bytecode caches as an installed user has them: with PYTHONDONTWRITEBYTECODE set (as in
    # some CI and sandbox environments) every module the warm-up did not find compiled is
    # compiled again on every run, which inflates every ratio to the floors
    environ.pop("PYTHONDONTWRITEBYTECODE", None)
    environ["LANG"] = environ["LC_ALL"] = "C.UTF-8"
    if in_place:
        script = shutil.which("ddp-doctor", path=str(Path(sys.executable).parent))
        return Env(sys.executable, script or "ddp-doctor", environ)
    wheels = workdir / "wheel"
    build = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(ROOT)]
    # offline first; a venv whose own setuptools predates the built-in bdist_wheel (a
    # Python 3.11 venv ships 65.x) builds in an isolated environment instead
    if subprocess.run([*build, "--no-build-isolation"], capture_output=True).returncode:
        subprocess.run(build, check=True)
    venv = workdir / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    wheel = next(wheels.glob("ddp_doctor-*.whl"))
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True
    )
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # the dependencies, from the interpreter running the benchmark (see the module docstring)
    # (every site-packages folder: a venv made with --system-site-packages keeps them there;
    # folders listed in a .pth are only added to sys.path, their own .pth files never run)
    import site

    # (and those on sys.path: a venv that borrows its own dependencies through a .pth, as a
    # git worktree's venv may, has them there only)
    folders = dict.fromkeys(
        [
            sysconfig.get_paths()["purelib"],
            *site.getsitepackages(),
            *(p for p in sys.path if p.endswith("site-packages") and os.path.isdir(p)),
        ]
    )
    Path(purelib, "zz_bench_deps.pth").write_text("".join(f"{f}\n" for f in folders))
    return Env(python, str(venv / "bin" / "ddp-doctor"), environ)


# ---------------------------------------------------------------------------- measuring


def time_run(argv: list[str], env: Env, stdin: int | None = None) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of one run; output is read and dropped.

    Output goes to a pipe, never to /dev/null: GNU grep notices /dev/null and stops at the
    first match, which would make `grep -c` look 100 times faster than it is.
    """
    start = time.perf_counter()
    child = subprocess.Popen(
        argv,
        stdin=stdin if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env.environ,
    )
    while child.stdout.read(1 << 16):
        pass
    child.stdout.close()
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    return elapsed, usage.ru_maxrss


# Linux carries a parent's peak RSS over fork and exec into the child's ru_maxrss, so the
# peak of a command is taken from a grandchild started by this small helper.
_PEAK_RSS = """
import os, subprocess, sys
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
while child.stdout.read(1 << 16):
    pass
_, _, usage = os.wait4(child.pid, 0)
print(usage.ru_maxrss)
"""


def peak_rss(argv: list[str], env: Env) -> int:
    """Peak RSS (KiB) of one run of `argv`."""
    done = subprocess.run(
        [sys.executable, "-S", "-c", _PEAK_RSS, *argv],
        capture_output=True,
        text=True,
        env=env.environ,
        check=True,
    )
    return int(done.stdout)


def time_to_prompt(env: Env, timeout: float = 20.0) -> float | None:
    """Seconds from spawning `ddp-doctor` in a terminal to its first question on screen."""
    import fcntl
    import struct
    import termios

    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
    environ = dict(env.environ, PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm-256color")
    start = time.perf_counter()
    child = subprocess.Popen(
        [env.script],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=environ,
        start_new_session=True,
        close_fds=True,
    )
    os.close(slave)
    seen = b""
    found = None
    try:
        while time.perf_counter() - start < timeout:
            ready, _, _ = select.select([master], [], [], 0.05)
            if not ready:
                if child.poll() is not None:
                    break
                continue
            try:
                seen += os.read(master, 65536)
            except OSError:
                break
            # prompt_toolkit (under questionary) turns on bracketed paste as its first prompt
            # starts reading keys: the moment the user can type
            if _PROMPT_READY in seen:
                found = time.perf_counter() - start
                break
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        os.close(master)
    return found


def session_available(env: Env) -> bool:
    probe = (
        "import importlib.util, sys; "
        "sys.exit(importlib.util.find_spec('ddp_doctor.talk.session') is None)"
    )
    return subprocess.run([env.python, "-c", probe], env=env.environ).returncode == 0


def startup(env: Env, runs: int) -> list[tuple[str, float, str]]:
    paste = str(PASTE)
    commands: dict[str, list[str]] = {
        "bare `python -c pass`": [env.python, "-c", "pass"],
        "`ddp-doctor --help`": [env.script, "--help"],
        "`ddp-doctor triage --json` (paste)": [env.script, "triage", "--json", paste],
        "`ddp-doctor triage --format markdown` (paste)": [
            env.script,
            "triage",
            "--format",
            "markdown",
            paste,
        ],
        "`ddp-doctor triage --format rich` (paste)": [
            env.script,
            "triage",
            "--format",
            "rich",
            paste,
        ],
        # floors: what the run cannot go below while it imports these (issue 14's goals)
        "floor: the standard library a report imports (`re`, `json`, `argparse`)": [
            env.python,
            "-c",
            "import re, json, argparse",
        ],
        "floor: `import rich.console` (the terminal report)": [
            env.python,
            "-c",
            "import rich.console",
        ],
        # what `--json` cannot go below while it is made of these modules: their imports alone,
        # no rules read, no text (issue 23: where the floor's goal stands against the tree)
        JSON_IMPORTS: [
            env.python,
            "-c",
            "import re, json, argparse, ddp_doctor.cli.main, ddp_doctor.reading.triage, "
            "ddp_doctor.reasoning.engine, ddp_doctor.output.render",
        ],
        "imports for the session (questionary + ours, rules loaded)": [
            env.python,
            "-c",
            "import questionary, rich.console, ddp_doctor.cli.main, ddp_doctor.reasoning.engine, "
            "ddp_doctor.output.render, ddp_doctor.knowledge.kb; ddp_doctor.knowledge.kb.load()",
        ],
    }
    no_cache = dict(env.environ, DDP_DOCTOR_NO_CACHE="1")
    for name, argv in commands.items():  # warm up: page cache, .pyc files, the rules cache
        if subprocess.run(argv, capture_output=True, env=env.environ).returncode:
            # a command that fails (a dependency missing from the venv) would be timed as fast
            sys.exit(f"bench: {name} fails in the measured venv: {' '.join(argv)}")
    samples: dict[str, list[float]] = {name: [] for name in commands}
    samples["`triage --json` without the rules cache (YAML parse)"] = []
    prompt = session_available(env)
    if prompt:
        samples["first interactive prompt (pty)"] = []
        time_to_prompt(env)
    for _ in range(runs):  # interleaved, so that load on the machine hits every row alike
        for name, argv in commands.items():
            samples[name].append(time_run(argv, env)[0])
        samples["`triage --json` without the rules cache (YAML parse)"].append(
            time_run(commands["`ddp-doctor triage --json` (paste)"], Env(env.python, "", no_cache))[
                0
            ]
        )
        if prompt:
            seconds = time_to_prompt(env)
            if seconds is not None:
                samples["first interactive prompt (pty)"].append(seconds)
    bare = statistics.median(samples["bare `python -c pass`"])
    rows = []
    for name, values in samples.items():
        if not values:
            rows.append((name, float("nan"), "no prompt seen"))
            continue
        median = statistics.median(values)
        rows.append((name, median * 1000, f"{median / bare:.1f}×"))
    return rows


# Each report against the floor it cannot go below (issue 23's goal: within 1.5× of it).
FLOOR_PAIRS = (
    (
        "`ddp-doctor triage --json` (paste)",
        "floor: the standard library a report imports (`re`, `json`, `argparse`)",
    ),
    (
        "`ddp-doctor triage --format rich` (paste)",
        "floor: `import rich.console` (the terminal report)",
    ),
)
FLOOR_GOAL = 1.5
JSON_IMPORTS = "the modules `triage --json` imports, nothing run (no rules, no text)"
# shown beside the goals, with no goal of its own: the share of the floor's budget the imports take
IMPORTS_PAIR = (JSON_IMPORTS, FLOOR_PAIRS[0][1])


def against_floors(rows: list[tuple[str, float, str]]) -> list[tuple[str, float, float, float]]:
    """(command, its ms, its floor's ms, ratio) for each pair, from one start-up run."""
    ms = {name: value for name, value, _ in rows}
    return [
        (run, ms[run], ms[floor], ms[run] / ms[floor])
        for run, floor in (*FLOOR_PAIRS, IMPORTS_PAIR)
    ]


# The search alone, in-process (no start-up, no analysis, no newline count): the floor of a
# big log's run with the rules' search keys. Blocks of 4 MiB, as the scanner reads them.
_SEARCH_ALONE = """
import sys, time
from ddp_doctor.knowledge import kb
from ddp_doctor.reading import scanner
keys = scanner._search_keys(kb.load())
find = scanner._accelerated_finder(keys) or scanner._pure_finder(keys)
started = time.perf_counter()
with open(sys.argv[1], "rb") as handle:
    while block := handle.read(4 << 20):
        find(block)
print(time.perf_counter() - started, len(keys))
"""


def search_alone(env: Env, path: Path) -> tuple[float, int]:
    """Seconds the search over the rules' keys takes on `path`, and how many keys."""
    argv = [env.python, "-c", _SEARCH_ALONE, str(path)]
    out = subprocess.run(argv, env=env.environ, capture_output=True, text=True, check=True)
    seconds, keys = out.stdout.split()
    return float(seconds), int(keys)


def biglog(env: Env, sizes: list[str], log_dir: Path, runs: int) -> list[tuple]:
    grep = shutil.which("grep")
    rows = []
    for size in sizes:
        for where in ("end", "start"):
            path = log_dir / f"ddp-{size}-{where}.log"
            if not path.exists():
                write_log(path, parse_size(size), where)
            with open(path, "rb") as handle:  # into the page cache, for both tools alike
                while handle.read(16 << 20):
                    pass
            ours, theirs, pure, alone = [], [], [], []
            # the pure-Python search too (DDP_DOCTOR_NO_ACCEL), where Hyperscan is installed
            no_accel = Env(env.python, env.script, dict(env.environ, DDP_DOCTOR_NO_ACCEL="1"))
            for _ in range(runs):
                if grep:
                    theirs.append(time_run([grep, "-c", ANCHOR, str(path)], env))
                ours.append(time_run([env.script, "triage", "--json", str(path)], env))
                pure.append(time_run([env.script, "triage", "--json", str(path)], no_accel))
                alone.append(search_alone(env, path))
            ours_s = statistics.median(t for t, _ in ours)
            pure_s = statistics.median(t for t, _ in pure)
            grep_s = statistics.median(t for t, _ in theirs) if theirs else float("nan")
            rss = peak_rss([env.script, "triage", "--json", str(path)], env) / 1024
            alone_s = statistics.median(t for t, _ in alone)
            rows.append(
                (size, where, grep_s, ours_s, ours_s / grep_s, pure_s, rss, path.stat().st_size)
                + (alone_s, alone[0][1])
            )
    return rows


def hostile(env: Env, work: Path, runs: int) -> list[tuple[str, float, int, str]]:
    """Seconds until a hostile user rules folder is refused (issue 14: must be under 1 s)."""
    bomb = work / "rules-bomb"
    bomb.mkdir(exist_ok=True)
    levels = ["        - &c0 {family: x}"]
    for i in range(1, 10):
        levels.append(f"        - &c{i} {{any: [" + ", ".join([f"*c{i - 1}"] * 10) + "]}")
    (bomb / "signatures.yaml").write_text(
        "families: []\nnotes:\n  - id: bomb\n    when:\n      any:\n"
        + "\n".join(levels)
        + "\n    text: {en: boom, zh: x}\n",
        encoding="utf-8",
    )
    regex = work / "rules-regex"
    regex.mkdir(exist_ok=True)
    (regex / "signatures.yaml").write_text(
        "families: []\nhints:\n  - pattern: '(a+)+$'\n    sets: {framework: plain}\n",
        encoding="utf-8",
    )
    line = work / "line.txt"
    line.write_text("a" * 40 + "!\n", encoding="utf-8")
    rows = []
    for name, folder in (("alias bomb ten deep in notes[].when", bomb), ("`(a+)+$` hint", regex)):
        argv = [env.script, "triage", "--rules", str(folder), str(line)]
        times, code = [], None
        for _ in range(runs):
            started = time.perf_counter()
            done = subprocess.run(argv, capture_output=True, text=True, env=env.environ)
            times.append(time.perf_counter() - started)
            code = done.returncode
        message = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
        rows.append((name, statistics.median(times), code, message))
    return rows


# ---------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description="ddp-doctor benchmarks")
    parser.add_argument(
        "what", nargs="?", choices=("all", "startup", "biglog", "hostile"), default="all"
    )
    parser.add_argument("--runs", type=int, default=40, help="start-up runs per command")
    parser.add_argument("--log-runs", type=int, default=3, help="runs per big log")
    parser.add_argument("--sizes", default="100M,1G")
    parser.add_argument("--keep-logs", type=Path, help="directory for the generated logs")
    parser.add_argument("--in-place", action="store_true", help="measure this environment")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ddp-bench-") as tmp:
        work = Path(tmp)
        env = make_env(work, args.in_place)
        print(
            f"python {sys.version.split()[0]} on {os.uname().sysname} {os.uname().machine}, "
            f"{os.cpu_count()} CPUs; {'this environment' if args.in_place else 'fresh venv'}\n"
        )
        if args.what in ("all", "startup"):
            print(f"| start-up (median of {args.runs}) | ms | × bare |\n|---|---:|---:|")
            rows = startup(env, args.runs)
            for name, ms, ratio in rows:
                print(f"| {name} | {ms:.1f} | {ratio} |")
            print()
            print(
                f"| against its floor (same run) | ms | floor ms | × floor | goal ≤ {FLOOR_GOAL}× |"
            )
            print("|---|---:|---:|---:|---|")
            for name, ms, floor_ms, ratio in against_floors(rows):
                met = "met" if ratio <= FLOOR_GOAL else "**not met**"
                if name == JSON_IMPORTS:
                    met = "(no goal: the imports alone)"
                print(f"| {name} | {ms:.1f} | {floor_ms:.1f} | {ratio:.2f}× | {met} |")
            print()
        if args.what in ("all", "hostile"):
            print(
                "| hostile rules folder | s (median of 5) | exit | message |\n|---|---:|---:|---|"
            )
            for name, seconds, code, message in hostile(env, work, 5):
                shown = message.replace(str(work), "…")[:140]
                print(f"| {name} | {seconds:.2f} | {code} | {shown} |")
            print()
        if args.what in ("all", "biglog"):
            log_dir = args.keep_logs or work / "logs"
            log_dir.mkdir(parents=True, exist_ok=True)
            # the tool falls back silently to the pure search: say which one this run measures
            probe = [env.python, "-c", "import hyperscan"]
            found = subprocess.run(probe, env=env.environ, capture_output=True).returncode == 0
            print("compiled matcher (hyperscan):", "installed" if found else "NOT installed")
            print(
                f"| log (median of {args.log_runs}) | error | grep -c s | ddp-doctor s "
                "| × grep | pure search s | × grep | peak RSS MB | search alone s (keys) "
                "| × grep |\n"
                "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
            )
            for row in biglog(env, args.sizes.split(","), log_dir, args.log_runs):
                size, where, grep_s, ours_s, ratio, pure_s, rss, nbytes, alone_s, keys = row
                print(
                    f"| {size} ({nbytes / 1e6:,.0f} MB) | {where} | {grep_s:.2f} | {ours_s:.2f} "
                    f"| {ratio:.1f}× | {pure_s:.2f} | {pure_s / grep_s:.1f}× | {rss:.0f} "
                    f"| {alone_s:.2f} ({keys}) | {alone_s / grep_s:.1f}× |"
                )


if __name__ == "__main__":
    main()
