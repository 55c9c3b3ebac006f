"""Questions asked beside a quoted error, through the public command line.

    python bench/quoted_error.py              # prints the tables (about a minute)
    python bench/quoted_error.py --posts FILE # a batch of real posts (tests/fixtures/posts/)

A real post often quotes the traceback and then asks about a fix ("Will
find_unused_parameters=True slow down my training?"). `ddp-doctor ask` diagnoses the quoted
error; this measures whether it also answers the question. Each question the corpus holds no
example of (the held-out questions of tests/fixtures/sentences/questions.yaml and every
question of the fresh batches, fresh_*.yaml) is asked three ways with `ask --json`:

- alone: the answer's fix and aspect are the question's (what `ask` does today);
- after a fenced real log (tests/fixtures/real/unused_module__nodebug__spawn.txt), and
- before it: the report is a diagnosis of that error, and one of its `answers` is the
  question's fix and aspect (or among that answer's `candidates`).

`dev` questions are left out: their own copies are retrieval examples, and the command line
cannot leave one out.

And the other way round, every description of the corpus (tests/fixtures/sentences/
sentences.yaml, both halves, those whose thread shows this error family) told beside the same
log: how often one gets an answer as if it asked about a fix (it should not), and whether its
settled cause is among the diagnosis's first two causes.

`--posts FILE`: real posts that quote an error and ask in prose, labelled from their threads
(tests/fixtures/posts/*.yaml): per post, whether `ask` diagnoses the error family quoted, which
of the questions it asks about a fix are answered (fix and aspect), answers to questions it
does not ask, and the settled cause in the top two where the thread settled one.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "fixtures" / "sentences"
LOG = ROOT / "tests" / "fixtures" / "real" / "unused_module__nodebug__spawn.txt"
FAMILY = "unfinished_reduction"  # the family of LOG


@cache
def fenced_log() -> str:
    """LOG as a post quotes it, read once for every item."""
    return "```\n" + LOG.read_text(encoding="utf-8") + "\n```"


def unseen_questions() -> list[dict]:
    sys.path.insert(0, str(ROOT / "bench"))
    from text_accuracy import split_for

    out = []
    corpus = yaml.safe_load((CORPUS / "questions.yaml").read_text(encoding="utf-8"))
    for item in corpus["questions"]:
        split = item.get("split") or split_for(item["source"], item["text"])
        if split == "held_out":
            out.append({**item, "batch": "corpus held out"})
    for path in sorted(CORPUS.glob("fresh_*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        out += [{**q, "batch": "fresh batches"} for q in data.get("questions") or []]
    return out


def ask_json(text: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "ddp_doctor", "--lang", "en", "ask", "--json", text],
        capture_output=True,
        text=True,
        encoding="utf-8",
        check=False,
    )
    return json.loads(done.stdout)


def judge(item: dict) -> dict[str, tuple[bool, bool]]:
    want = ([item["fix"]], item["aspect"])
    shown_want = (item["fix"], item["aspect"])
    log = fenced_log()
    out = {}
    alone = ask_json(item["text"])
    right = alone.get("kind") == "answer" and (alone["fixes"], alone["aspect"]) == want
    among = right or shown_want in [(c["fix"], c["aspect"]) for c in alone.get("candidates", [])]
    out["alone"] = (right, among)
    for where, post in (
        ("after the log", f"{log}\n\n{item['text']}"),
        ("before the log", f"{item['text']}\n\n{log}"),
    ):
        data = ask_json(post)
        diagnosed = data.get("kind") == "diagnosis" and data.get("family") == FAMILY
        answers = data.get("answers") or [] if diagnosed else []
        right = any(item["fix"] in a["fixes"] and a["aspect"] == want[1] for a in answers)
        shown = [(c["fix"], c["aspect"]) for a in answers for c in a.get("candidates") or []]
        out[where] = (diagnosed and right, diagnosed and (right or shown_want in shown))
        out[where + " diagnosed"] = (diagnosed, diagnosed)
    return out


def descriptions() -> list[dict]:
    data = yaml.safe_load((CORPUS / "sentences.yaml").read_text(encoding="utf-8"))
    return [s for s in data["sentences"] if s.get("family", FAMILY) == FAMILY]


def judge_description(item: dict) -> tuple[bool, bool]:
    """(answered as a question, settled cause in the top two) for a description beside LOG."""
    log = fenced_log()
    data = ask_json(f"{item['text']}\n\n{log}")
    top2 = [c["id"] for c in data.get("causes") or []][:2]
    return bool(data.get("answers")), item["cause"] in top2


def measure_posts(path: Path) -> str:
    posts = yaml.safe_load(path.read_text(encoding="utf-8"))["posts"]
    with ThreadPoolExecutor(max_workers=2) as pool:
        reports = list(pool.map(lambda post: ask_json(post["text"]), posts))
    table: dict = defaultdict(lambda: defaultdict(int))
    lines = []
    for post, data in zip(posts, reports):
        asked = {(q["fix"], q["aspect"]) for q in post["questions"]}
        given = {(f, a["aspect"]) for a in data.get("answers") or [] for f in a["fixes"]}
        if data.get("kind") == "answer":  # answered, not diagnosed
            given = {(f, data["aspect"]) for f in data["fixes"]}
        diagnosed = data.get("kind") == "diagnosis" and data.get("family") == post["family"]
        top2 = [c["id"] for c in data.get("causes") or []][:2]
        for key in ((post["split"], post["lang"]), (post["split"], "all"), ("all", "all")):
            row = table[key]
            row["n"] += 1
            row["diagnosed"] += diagnosed
            row["asked"] += len(asked)
            row["answered"] += len(asked & given)
            row["stray"] += len(given - asked)
            row["settled"] += post["cause"] is not None
            row["top2"] += post["cause"] in top2
        lines.append(
            f"- {post['source']}: {data.get('kind')} {data.get('family')}; asked {sorted(asked)}, "
            f"answered {sorted(given)}; cause {post['cause']}, top two {top2}"
        )
    out = [
        "| posts | lang | n | the quoted family diagnosed | questions about a fix answered "
        "| answers to questions not asked | settled cause in the top two |",
        "|---|---|---|---|---|---|---|",
    ]
    for (split, lang), row in sorted(table.items()):
        out.append(
            f"| {split} | {lang} | {row['n']} | {row['diagnosed']} | "
            f"{row['answered']} of {row['asked']} | {row['stray']} | "
            f"{row['top2']} of {row['settled']} |"
        )
    return "\n".join(out + [""] + lines) + "\n"


def main() -> int:
    if "--posts" in sys.argv:
        sys.stdout.write(measure_posts(Path(sys.argv[sys.argv.index("--posts") + 1])))
        return 0
    items = unseen_questions()
    told = descriptions()
    with ThreadPoolExecutor(max_workers=2) as pool:
        judged = list(pool.map(judge, items))
        described = list(pool.map(judge_description, told))
    table: dict = defaultdict(lambda: defaultdict(int))
    for item, got in zip(items, judged):
        for key in ((item["batch"], item["lang"]), (item["batch"], "all")):
            row = table[key]
            row["n"] += 1
            for how, (right, among) in got.items():
                row[how] += right
                row[how + " among"] += among
    print(
        "| questions | lang | n | answered alone | beside the error, after it | before it "
        "| the error diagnosed (after / before) | among the choices (alone / after / before) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for (batch, lang), row in sorted(table.items()):
        n = row["n"]
        print(
            f"| {batch} | {lang} | {n} | {row['alone']} | {row['after the log']} | "
            f"{row['before the log']} | {row['after the log diagnosed']} / "
            f"{row['before the log diagnosed']} | {row['alone among']} / "
            f"{row['after the log among']} / {row['before the log among']} |"
        )
    print()
    print(
        "| descriptions beside the error | n | answered as a question "
        "| settled cause in the top two |"
    )
    print("|---|---|---|---|")
    for split in ("dev", "held_out"):
        rows = [d for item, d in zip(told, described) if item["split"] == split]
        answered = sum(a for a, _ in rows)
        top2 = sum(t for _, t in rows)
        print(f"| {split} | {len(rows)} | {answered} | {top2} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
