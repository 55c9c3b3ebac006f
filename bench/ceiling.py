"""How well can the sentence alone be read at all? Two blind expert readings against the labels.

Issue 21 asks that a question be answered from the right fix entry 85 % of the time and about the
right aspect 70 %. The labels come from each thread as a whole; the reader only has the
sentence. To know how much of a miss is the reader's and how much is the sentence's, two
helpers acting as DDP experts read every labelled question of the corpus and of the fresh
batches (220) the way `ask` gets them, alone, and picked the fix entry and aspect an expert
would answer, with how readable the sentence was (`yes`: both clear from the sentence; `partly`;
`guess`). They saw only `bench/ceiling/items.yaml` (the texts, shuffled, no label, no source) and
`bench/ceiling/catalogue.md` (the fix entries and aspects), ran no tool and opened no other
file. Their answers are `bench/ceiling/answers_A.yaml` and `answers_B.yaml`; the labels are
joined here by id (SHA-1 of source + text), from tests/fixtures/sentences/.

    python bench/ceiling.py            # the table, expert A and B beside ddp-doctor

ddp-doctor's reading is `ask`'s (both readers, as bench/text_accuracy.py measures them: a `dev`
corpus item with its own copy left out of the examples).
"""

from __future__ import annotations

import hashlib
import sys
from collections import Counter
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "bench" / "ceiling"
sys.path.insert(0, str(ROOT / "bench"))

import text_accuracy  # noqa: E402  (a sibling script, not a package)

READERS = ("A", "B")


def item_id(source: str, text: str) -> str:
    return "q" + hashlib.sha1((source + text).encode()).hexdigest()[:8]


def labelled() -> list[dict]:
    """Every labelled question, with its group: corpus or fresh, dev or held_out, language."""
    files = [text_accuracy.CORPUS / "questions.yaml"]
    files += sorted(text_accuracy.CORPUS.glob("fresh_*.yaml"))
    out = []
    for path in files:
        for q in yaml.safe_load(path.read_text(encoding="utf-8")).get("questions") or []:
            split = q.get("split") or text_accuracy.split_for(q["source"], q["text"])
            where = "corpus" if path.name == "questions.yaml" else "fresh"
            out.append({**q, "id": item_id(q["source"], q["text"]), "group": (where, split)})
    return out


def expert_answers(name: str) -> dict[str, dict]:
    data = yaml.safe_load((HERE / f"answers_{name}.yaml").read_text(encoding="utf-8"))
    # `readable: yes` unquoted is YAML 1.1's boolean true
    return {
        a["id"]: {**a, "readable": {True: "yes", False: "no"}.get(a["readable"], a["readable"])}
        for a in data["answers"]
    }


def tool_reading(kb, item: dict) -> tuple[tuple[str, ...], str | None]:
    from ddp_doctor.reading import retrieve

    _, calibration = retrieve.index_for(kb)
    own_copy = item["group"] == ("corpus", "dev")  # the examples hold the corpus's dev items
    understood, near = text_accuracy.read_both(kb, item["text"], own_copy)
    intent = retrieve.decide(understood, near, calibration).understood.intent
    return (intent.fixes, intent.aspect) if intent is not None else ((), None)


def measure(kb, items: list[dict], experts: dict[str, dict[str, dict]]) -> Counter:
    count: Counter = Counter()
    for item in items:
        readers = {
            name: (answers[item["id"]]["fix"], answers[item["id"]]["aspect"])
            for name, answers in experts.items()
        }
        fixes, aspect = tool_reading(kb, item)
        readable = all(answers[item["id"]]["readable"] == "yes" for answers in experts.values())
        for key in (item["group"] + (item["lang"],), item["group"] + ("all",)):
            for subset in ("all", "readable") if readable else ("all",):
                row = key + (subset,)
                count[row + ("n",)] += 1
                for name, (fix, asp) in readers.items():
                    count[row + (name, "entry")] += fix == item["fix"]
                    count[row + (name, "aspect")] += (fix, asp) == (item["fix"], item["aspect"])
                # as bench/text_accuracy.py counts it: the fix among those the answer is about
                count[row + ("tool", "entry")] += item["fix"] in fixes
                count[row + ("tool", "aspect")] += item["fix"] in fixes and aspect == item["aspect"]
                count[row + ("agree",)] += len(set(readers.values())) == 1
    return count


def _cell(part: int, whole: int) -> str:
    return f"{round(100 * part / whole)}% ({part}/{whole})" if whole else "—"


def report(count: Counter) -> str:
    lines = [
        "| questions | lang | sentences | n | right entry: expert A / B / ddp-doctor "
        "| right aspect: expert A / B / ddp-doctor | A and B agree |",
        "|---|---|---|---:|---|---|---|",
    ]
    rows = sorted(
        {k[:4] for k in count},
        key=lambda k: (k[0], k[1] != "dev", k[2] != "all", k[2], k[3] != "all"),
    )
    for where, split, lang, subset in rows:
        row = (where, split, lang, subset)
        n = count[row + ("n",)]
        entry = " / ".join(_cell(count[row + (who, "entry")], n) for who in (*READERS, "tool"))
        aspect = " / ".join(_cell(count[row + (who, "aspect")], n) for who in (*READERS, "tool"))
        shown = "every one" if subset == "all" else "readable (both: `yes`)"
        lines.append(
            f"| {where} {split} | {lang} | {shown} | {n} | {entry} | {aspect} "
            f"| {_cell(count[row + ('agree',)], n)} |"
        )
    return "\n".join(lines)


def main() -> int:
    from ddp_doctor.knowledge import kb as kb_module

    kb = kb_module.load()
    items = labelled()
    experts = {name: expert_answers(name) for name in READERS}
    missing = [i["id"] for i in items if any(i["id"] not in e for e in experts.values())]
    if missing:
        print(f"no expert answer for {len(missing)} items, e.g. {missing[:3]}", file=sys.stderr)
        return 1
    print(report(measure(kb, items, experts)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
