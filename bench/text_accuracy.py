"""Free-text understanding measured on real sentences: top-1 / top-2 cause, answered questions.

    python bench/text_accuracy.py       # prints the markdown table (copied to bench/TEXT.md)

Sentences and questions are tests/fixtures/sentences/*.yaml (real user prose, with the source
thread). A sentence counts when the cause its thread settled is the engine's first (top-1) or
among its first two (top-2) causes after reading the sentence, with the family set to the usual
error (`unfinished_reduction`) as `ddp-doctor ask` does. The "no text" row is the same ranking
with nothing read: what a sentence adds is the difference. A question counts as answered when
it is recognised as a question about the fix its thread was about.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "fixtures" / "sentences"


def load_corpus():
    sentences = yaml.safe_load((CORPUS / "sentences.yaml").read_text(encoding="utf-8"))["sentences"]
    questions = yaml.safe_load((CORPUS / "questions.yaml").read_text(encoding="utf-8"))["questions"]
    return sentences, questions


def rank(kb, text: str | None, family: str = "unfinished_reduction") -> list[str]:
    """The causes ranked for the error `family` (what the thread's error message says; the tool
    reads that itself) and the facts read from `text` (what this measures)."""
    from ddp_doctor.engine import rank_causes
    from ddp_doctor.understand import understand

    facts = {"family": family}
    if text is not None:
        facts.update(understand(kb, text).facts)
    return [r.id for r in rank_causes(kb, facts)]


def measure(kb, sentences, questions) -> dict:
    """Counts per (language, split): n, top1, top2, baseline top2; per language for questions."""
    from ddp_doctor.understand import understand

    counts: dict = defaultdict(lambda: defaultdict(int))
    misses = []
    for item in sentences:
        family = item.get("family", "unfinished_reduction")
        ranked = rank(kb, item["text"], family)
        baseline = rank(kb, None, family)
        for key in ((item["lang"], item["split"]), (item["lang"], "all")):
            row = counts[key]
            row["n"] += 1
            row["top1"] += ranked[0] == item["cause"]
            row["top2"] += item["cause"] in ranked[:2]
            row["base2"] += item["cause"] in baseline[:2]
        if item["cause"] not in ranked[:2]:
            misses.append((item, ranked[:2]))
    answered: dict = defaultdict(lambda: defaultdict(int))
    for item in questions:
        found = understand(kb, item["text"])
        ok = found.intent is not None and item["fix"] in found.intent.fixes
        for key in (item["lang"], "all"):
            answered[key]["n"] += 1
            answered[key]["answered"] += ok
            answered[key]["aspect"] += ok and found.intent.aspect == item["aspect"]
    return {"sentences": counts, "questions": answered, "misses": misses}


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}% ({part}/{whole})" if whole else "–"


def report(result) -> str:
    lines = [
        "| language | split | sentences | top-1 | top-2 | top-2 with no text read |",
        "|---|---|---|---|---|---|",
    ]
    for (lang, split), row in sorted(result["sentences"].items()):
        lines.append(
            f"| {lang} | {split} | {row['n']} | {_pct(row['top1'], row['n'])} | "
            f"{_pct(row['top2'], row['n'])} | {_pct(row['base2'], row['n'])} |"
        )
    lines += ["", "| language | questions | answered from the right entry | and the right aspect |"]
    lines.append("|---|---|---|---|")
    for lang, row in sorted(result["questions"].items()):
        lines.append(
            f"| {lang} | {row['n']} | {_pct(row['answered'], row['n'])} | "
            f"{_pct(row['aspect'], row['n'])} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    sys.path.insert(0, str(ROOT))
    from ddp_doctor.kb import load

    kb = load()
    result = measure(kb, *load_corpus())
    sys.stdout.write(report(result))
    if "-v" in sys.argv:
        for item, top in result["misses"]:
            sys.stdout.write(f"MISS {item['split']} {item['cause']} -> {top}: {item['text']}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
