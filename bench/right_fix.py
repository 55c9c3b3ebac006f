"""The "right fix" benchmark (issue 20): does a truthful user reach a fix that works?

.venv/bin/python bench/right_fix.py              # every case; writes bench/RIGHT_FIX.md
.venv/bin/python bench/right_fix.py --quick      # real fixtures and interview cases only
.venv/bin/python bench/right_fix.py --session 4  # also 4 cases through the interactive session
.venv/bin/python bench/right_fix.py --check      # the truth tables against tests/ddp/measured.json
.venv/bin/python bench/right_fix.py --sentences tests/fixtures/sentences/fresh_2026-12-04b.yaml
                                                 # a fresh batch's sentences alone (prints only)
.venv/bin/python bench/right_fix.py --corpus tests/fixtures/real/fresh_2026-12-04d
                                                 # a fresh batch of pastes alone (prints only):
                                                 # what triage reads, then the right-fix table

A truthful user is simulated through the public command line only (never the engine's
functions, so the benchmark keeps working while the engine changes): the first report comes
from `triage PASTE --json` (a corpus paste, a real fixture), `ask SENTENCE --json` (a sentence)
or `--answers EMPTY --json` (an interview case); then, while the report has no unconditional fix
(`fixes` empty), its `splitting_question` is answered with what is true for the case's cause
(bench/truths.yaml, "unsure" where the user would not know) and the report is asked again with
`--answers A.yaml [--paste P] --json`; at most MAX_ANSWERS answers, and it stops when no question
is left or one repeats. A reached fix is right or wrong by the truth table of the cause and
variant, which is written from the real-DDP measurements, not from the engine.

A case whose variant the source does not settle (a corpus paste, a sentence) is played once per
variant of its cause; it counts as reached within k answers only if every variant reaches a right
fix within k, and as wrong if any variant is advised a failing fix.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from itertools import combinations
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
TRUTHS = ROOT / "bench" / "truths.yaml"
OUT = ROOT / "bench" / "RIGHT_FIX.md"
CORPUS = ROOT / "tests" / "fixtures" / "real" / "corpus"
FIXTURES = ROOT / "tests" / "fixtures" / "real"
SENTENCES = ROOT / "tests" / "fixtures" / "sentences" / "sentences.yaml"
MEASURED = ROOT / "tests" / "ddp" / "measured.json"
MAX_ANSWERS = 6  # the simulated user gives up after this many answers
WITHIN = (0, 1, 2, 3, 4)
WORKERS = 2  # the machine is shared: at most two CLI processes at a time
DEFAULT_FAMILY = "unfinished_reduction"


# ---------------------------------------------------------------------------- the command line


def cli_command() -> list[str]:
    """The installed console script beside this interpreter, else `python -m ddp_doctor`."""
    script = Path(sys.executable).with_name("ddp-doctor")
    return [str(script)] if script.exists() else [sys.executable, "-m", "ddp_doctor"]


def run_cli(args: list[str], workdir: str) -> dict:
    """One run of ddp-doctor with `--json --lang en`; its JSON document, or `{_error: ...}`."""
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "100"}
    proc = subprocess.run(
        [*cli_command(), *args, "--json", "--lang", "en"],
        capture_output=True,
        text=True,
        cwd=workdir,
        env=env,
        timeout=120,
        check=False,
    )
    try:
        data = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return {"_error": f"exit {proc.returncode}: {proc.stderr.strip()[-200:]}"}
    data["_exit"] = proc.returncode
    return data


def question_table(workdir: str, lang: str = "en") -> dict[str, dict]:
    """`ddp-doctor questions --json`, by id."""
    proc = subprocess.run(
        [*cli_command(), "questions", "--json", "--lang", lang],
        capture_output=True,
        text=True,
        cwd=workdir,
        check=True,
    )
    return {row["id"]: row for row in json.loads(proc.stdout)}


# ---------------------------------------------------------------------------- cases


@dataclass(frozen=True)
class Case:
    id: str
    group: str  # development / held_out / fixtures / interview
    source: str  # corpus / sentence / fixture / interview
    cause: str
    variants: tuple[str, ...]
    paste: str | None = None  # a file path
    text: str | None = None  # a sentence for `ask`
    thread: bool = False  # a public thread: the framework is "unsure" unless it is known
    answers: dict = field(default_factory=dict)  # answers the case settles beyond its variant
    lang: str = "en"  # the language of its sentence: a Chinese one is told to a Chinese session
    told: dict = field(default_factory=dict)  # answers given before the first report (`seeded`)


def load_truths() -> dict:
    return yaml.safe_load(TRUTHS.read_text(encoding="utf-8"))


def family_example(family: str, number: int, workdir: str) -> str:
    """A file holding the family's `number`-th positive example from rules/signatures.yaml
    (the text the causes' interview cases are defined against)."""
    rules = yaml.safe_load((ROOT / "rules" / "signatures.yaml").read_text(encoding="utf-8"))
    entry = next(f for f in rules["families"] if f["id"] == family)
    example = entry["examples"]["positive"][number - 1]
    if "file" in example:
        return str(ROOT / "tests" / example["file"])
    path = Path(workdir) / f"example-{family}-{number}.txt"
    path.write_text(example["text"], encoding="utf-8")
    return str(path)


def corpus_cases(truths: dict, folder: Path = CORPUS) -> list[Case]:
    cases = []
    for meta_path in sorted(folder.glob("*.yaml")):
        meta = yaml.safe_load(meta_path.read_text(encoding="utf-8"))
        if not isinstance(meta, dict) or not meta.get("cause"):
            continue
        name = meta_path.stem
        cause = meta["cause"]
        extra = (truths.get("corpus") or {}).get(name) or {}
        variants = extra.get("variants") or truths["causes"][cause]["default"]
        answers = dict(extra.get("answers") or {})
        if "framework" in extra:
            answers["framework"] = extra["framework"]
        split = "held_out" if meta.get("split") == "held_out" else "development"
        paste = str(meta_path.with_suffix(".txt"))
        cases.append(
            Case(name, split, "corpus", cause, tuple(variants), paste, None, True, answers)
        )
    return cases


def sentence_cases(truths: dict, workdir: str, source: Path = SENTENCES) -> list[Case]:
    items = yaml.safe_load(source.read_text(encoding="utf-8"))["sentences"]
    cases = []
    for number, item in enumerate(items, 1):
        cause = item["cause"]
        family = item.get("family")
        paste = family_example(family, 1, workdir) if family else None
        split = "held_out" if item["split"] == "held_out" else "development"
        settled = next(
            (
                v
                for prefix, v in (truths.get("sentences") or {}).items()
                if item["text"].startswith(prefix)
            ),
            {},
        )
        variants = tuple(settled.get("variants") or truths["causes"][cause]["default"])
        case_id = f"sentence {number} ({item['lang']})"
        cases.append(
            Case(
                case_id,
                split,
                "sentence",
                cause,
                variants,
                paste,
                item["text"],
                True,
                {},
                item["lang"],
            )
        )
    return cases


def fixture_cases(truths: dict) -> list[Case]:
    cases = []
    table = truths["fixtures"]
    for path in sorted(FIXTURES.glob("*.txt")):
        scenario, level = path.stem.split("__")[:2]
        entry = table.get("detail") if level == "detail" else table.get(scenario)
        if entry is None:
            continue  # reported as unmapped
        answers = dict(entry.get("answers") or {})
        cases.append(
            Case(
                path.stem,
                "fixtures",
                "fixture",
                entry["cause"],
                (entry["variant"],),
                str(path),
                answers=answers,
            )
        )
    return cases


def several_losses_cases(truths: dict, first: bool = False) -> list[Case]:
    """The fixtures whose cause is not a missing loss, played by a user whose model also sums
    several losses, every one of them in the total (detection, multi-task): their cause is
    unchanged. `first`: they answer the training-step list with "several losses" (what its
    first answer said until 2edf460; the list's other answers are then asked one by one)."""
    summed = {"multitask": "yes", "all_losses_summed": "yes"}
    if first:
        summed["step_pattern"] = "several_losses"
    return [
        replace(case, answers={**case.answers, **summed})
        for case in fixture_cases(truths)
        if case.cause != "multitask_missing_loss"
    ]


def interview_cases(truths: dict, workdir: str) -> list[Case]:
    """The causes' `cases:` in rules/causes.yaml: the family's example as the paste (none for
    the default family: the interview starts from nothing), the case's truths as answers."""
    rules = yaml.safe_load((ROOT / "rules" / "causes.yaml").read_text(encoding="utf-8"))
    questions = question_table(workdir)
    by_fact = {q["fact"]: q for q in questions.values() if q["fact"]}
    cases = []
    for cause in rules["causes"]:
        for number, case in enumerate(cause.get("cases") or [], 1):
            key = f"{cause['id']}#{number}"
            variant = truths["interview"].get(key) or truths["causes"][cause["id"]]["default"][0]
            family = case.get("family", DEFAULT_FAMILY)
            paste = (
                None
                if family == DEFAULT_FAMILY and "example" not in case
                else family_example(family, case.get("example", 1), workdir)
            )
            answers = {}
            for fact, value in (case.get("truths") or {}).items():
                question = by_fact.get(fact)
                if question is not None:
                    answers[question["id"]] = fact_answer(question, value) or "unsure"
            cases.append(
                Case(
                    key,
                    "interview",
                    "interview",
                    cause["id"],
                    (variant,),
                    paste,
                    None,
                    False,
                    answers,
                )
            )
    return cases


# facts any description may tell besides its cause's own: the options it turned on, checkpointing
# and the framework (what `ddp-doctor ask` most often reads from a sentence, rules/lexicon.yaml)
TOLD_BESIDES = (
    "find_unused_enabled",
    "static_graph_enabled",
    "gradient_checkpointing",
    "framework",
)


def seeded_cases(truths: dict, workdir: str) -> list[Case]:
    """Every variant of every cause with part of its truth already told, as a description read
    right would tell it: each true answer alone (its cause's own and TOLD_BESIDES), then each
    pair with one of its cause's own in it (triples too, once: 1,547 starts, all right within
    3 answers on 2013fbf; not kept, for the time). Each starts from the variant's own error as
    the real DDP fixtures show it (`__nodebug__spawn`: no module names), else from its cause's
    interview case (a variant with no error of its own to show, or none measured, is left
    out). Whatever a new
    wording lets the reader get right, the rest of the way must still lead to a right fix: this
    walks that rest for every such start, with no sentence involved."""
    rules = yaml.safe_load((ROOT / "rules" / "causes.yaml").read_text(encoding="utf-8"))
    first_case = {c["id"]: (c.get("cases") or [{}])[0] for c in rules["causes"]}
    questions = question_table(workdir)
    measured: dict[tuple[str, str], list[Case]] = {}
    for case in fixture_cases(truths):
        if case.id.endswith("__nodebug__spawn"):
            measured.setdefault((case.cause, case.variants[0]), []).append(case)
    cases = []
    for cause, entry in truths["causes"].items():
        start = first_case.get(cause, {})
        family = start.get("family", DEFAULT_FAMILY)
        paste = (
            None
            if family == DEFAULT_FAMILY and "example" not in start
            else family_example(family, start.get("example", 1), workdir)
        )
        for variant, table in entry["variants"].items():
            if not table.get("scenarios") or table.get("no_error"):
                continue
            own_answers = table.get("answers") or {}
            truth = {**truths["baseline"], **own_answers}
            told = {}
            for key in [*own_answers, *TOLD_BESIDES]:
                question = questions.get(key)
                if question is None or question["per_module"] or key in told:
                    continue
                values = [o["value"] for o in question["options"]]
                answer = first_fitting(truth.get(key), values)
                if answer in values and answer != "unsure":
                    told[key] = answer
            own = [key for key in own_answers if key in told]
            seeds = [{key: value} for key, value in told.items()]
            seeds += [
                {a: told[a], b: told[b]} for a, b in combinations(told, 2) if a in own or b in own
            ]
            starts = [(f.id, f.paste, f.answers) for f in measured.get((cause, variant), [])]
            for name, path, settled in starts or [
                ("no paste" if paste is None else family, paste, {})
            ]:
                for seed in seeds:
                    said = ", ".join(f"{key}={value}" for key, value in seed.items())
                    cases.append(
                        Case(
                            f"{cause}/{variant} from {name}, told {said}",
                            "seeded",
                            "seeded",
                            cause,
                            (variant,),
                            path,
                            answers=settled,
                            told=seed,
                        )
                    )
    return cases


def fact_answer(question: dict, value) -> str | None:
    """The option of `question` that says `value` for its fact (True -> yes), if any."""
    if value is None:
        return "unsure"
    said = ("yes" if value else "no") if isinstance(value, bool) else str(value)
    values = [o["value"] for o in question["options"]]
    return said if said in values else None


# ---------------------------------------------------------------------------- the truthful user


def truth_answers(truths: dict, case: Case, variant: str) -> dict:
    table = truths["causes"][case.cause]["variants"][variant]
    answers = dict(truths["baseline"])
    if case.thread:
        answers.update(truths.get("thread_defaults") or {})
    answers.update(table.get("answers") or {})
    answers.update(case.answers)
    return answers


def first_fitting(answer, values: list[str]):
    """A truth that lists every option that fits (`[a, b]`) answers as the question asks, "if
    several do, pick the first": the first of `values` (the options offered, in order) it
    lists, else "unsure"; a single answer is itself."""
    if not isinstance(answer, list):
        return answer
    return next((value for value in values if value in answer), "unsure")


def truthful(answers: dict, question: dict, unknown: set) -> str:
    """The answer to a splitting question; a question the table does not know is "unsure"."""
    qid = question["id"]
    base = qid.split(":", 1)[0]
    answer = answers.get(qid, answers.get(base))
    values = [o["value"] for o in question.get("options") or []]
    offered = set(values)
    answer = first_fitting(answer, values)
    if answer is None:
        unknown.add(base)
        answer = "unsure"
    if offered and answer not in offered:
        unknown.add(f"{base}={answer} (not offered)")
        answer = "unsure" if "unsure" in offered else sorted(offered)[0]
    return answer


def sentence_seed(report: dict, questions: dict, truths: dict) -> dict:
    """A sentence's reading as the answers that say it, to tell which variants the sentence
    itself rules out (`--answers` gets the sentence itself, as `said`)."""
    seed = {}
    by_fact = {q["fact"]: q for q in questions.values() if q["fact"] and not q["per_module"]}
    extra = truths.get("fact_answers") or {}
    facts = {}
    for reading in report.get("understood") or []:
        if reading.get("used"):
            facts.update(reading.get("facts") or {})
    carried = {}  # a fact_answers entry says more than one fact's own question: it wins
    for fact, value in facts.items():
        key = f"{fact}={json.dumps(value)}"
        question = by_fact.get(fact)
        answer = fact_answer(question, value) if question else None
        if answer is not None:
            seed[question["id"]] = answer
        elif key in extra:
            carried.update(extra[key])
    return {**seed, **carried}


@dataclass
class Run:
    case: Case
    variant: str
    reached_at: int | None = None  # answers given when a right fix was reached
    given: list = field(default_factory=list)  # (question id, answer)
    stop: str = ""
    fixes: list = field(default_factory=list)
    wrong: list = field(default_factory=list)  # failing fixes advised (measured)
    wrong_reported: list = field(default_factory=list)  # failing by issue 20 only
    wrong_rows: list = field(
        default_factory=list
    )  # first report: a failing row whose condition fits
    unclassified: list = field(default_factory=list)  # advised fixes the table does not know
    table_hit: bool = False
    unknown: set = field(default_factory=set)
    lost: list = field(default_factory=list)  # why `ask` gave no reading to carry on
    asked: list = field(default_factory=list)  # question ids, in order
    excluded: bool = False  # the sentence's own reading rules this variant out


def picked(answers: dict, report: dict, questions: dict) -> dict:
    """The answers with each list of fitting options replaced by the one the user picks: the
    first in the question's order among those offered (the report's deciding question lists
    only those; any other question, every option)."""
    shown = report.get("splitting_question") or {}
    chosen = {}
    for qid, answer in answers.items():
        if isinstance(answer, list):
            base = questions.get(qid) or {}
            options = shown["options"] if shown.get("id") == qid else base.get("options") or []
            answer = first_fitting(answer, [o["value"] for o in options])
        chosen[qid] = answer
    return chosen


def row_fits(row: dict, answers: dict) -> bool:
    """A decision-table row whose condition the truthful user's answers satisfy."""
    pairs = (row.get("when") or {}).get("answers") or []
    if not pairs:
        return False
    for pair in pairs:
        qid = pair["question"]
        truth = answers.get(qid, answers.get(qid.split(":", 1)[0]))
        if truth != pair["answer"]:
            return False
    return True


def simulate(case: Case, variant: str, truths: dict, questions: dict, workdir: str) -> Run:
    table = truths["causes"][case.cause]["variants"][variant]
    right, failing = set(table["right"]), set(table.get("failing") or [])
    reported = set(table.get("failing_reported") or [])
    answers = truth_answers(truths, case, variant)
    run = Run(case, variant)
    paste = ["--paste", case.paste] if case.paste else []
    seed: dict = {}
    if case.source == "sentence":
        report = run_cli(["ask", case.text, *paste], workdir)
        if report.get("kind") == "diagnosis":
            read = sentence_seed(report, questions, truths)
            deciding = deciding_questions(truths, case)
            chosen = picked(answers, report, questions)
            run.excluded = any(read.get(q, chosen[q]) != chosen[q] for q in deciding)
            # the sentence itself goes into the answers file, as a saved session keeps it:
            # `--answers` reads it again, so every fact it set stays (none is lost)
            seed = {"said": case.text}
        else:  # read as a question about a fix, or not understood: the interview starts bare
            run.lost = [f"ask: {report.get('kind') or report.get('status')}"]
            report = run_cli(
                ["--answers", write_answers(workdir, case, variant, {}), *paste], workdir
            )
    elif case.source == "interview":
        report = run_cli(["--answers", write_answers(workdir, case, variant, {}), *paste], workdir)
    elif case.source == "seeded":
        seed = dict(case.told)
        report = run_cli(
            ["--answers", write_answers(workdir, case, variant, seed), *paste], workdir
        )
    else:
        report = run_cli(["triage", case.paste], workdir)

    first = report
    advised_rows = first.get("conditional_fixes") or []
    chosen = picked(answers, first, questions)
    run.table_hit = any(r["id"] in right and row_fits(r, chosen) for r in advised_rows)
    run.wrong_rows = sorted(
        {r["id"] for r in advised_rows if r["id"] in failing and row_fits(r, chosen)}
    )
    given: dict = {}
    while True:
        if "_error" in report:
            run.stop = report["_error"]
            break
        fixes = [f["id"] for f in report.get("fixes") or []]
        diagnostics = [d["id"] for d in report.get("diagnostics") or []]
        found = fixes + (diagnostics if table.get("accept_diagnostics") else [])
        if fixes or (set(found) & right):
            run.fixes = fixes
            run.wrong = sorted(set(fixes) & failing)
            run.wrong_reported = sorted(set(fixes) & reported)
            run.unclassified = sorted(set(fixes) - right - failing - reported)
            if set(found) & right:
                run.reached_at = len(given)
                run.stop = "right fix"
            else:
                run.stop = "fix not right: " + ", ".join(fixes)
            break
        question = report.get("splitting_question")
        if report.get("status") == "no_known_error" and case.paste:
            run.stop = "no known error in the paste"
            break
        if not question:
            run.stop = "no question left"
            break
        qid = question["id"]
        if qid in given or qid in seed:
            run.stop = f"question repeats: {qid}"
            break
        if len(given) >= MAX_ANSWERS:
            run.stop = f"{MAX_ANSWERS} answers"
            break
        given[qid] = truthful(answers, question, run.unknown)
        run.asked.append(qid)
        run.given.append((qid, given[qid]))
        path = write_answers(workdir, case, variant, {**seed, **given})
        report = run_cli(["--answers", path, *paste], workdir)
    if run.reached_at == 0:
        run.table_hit = True  # the paste (or sentence) alone gave the right fix
    return run


def deciding_questions(truths: dict, case: Case) -> set[str]:
    """The questions whose true answer differs between the variants the case is played in."""
    variants = truths["causes"][case.cause]["variants"]
    keys = {q for name in case.variants for q in variants[name].get("answers") or {}}
    return {
        q
        for q in keys
        if len({_hashable((variants[name].get("answers") or {}).get(q)) for name in case.variants})
        > 1
    }


def _hashable(answer):
    return tuple(answer) if isinstance(answer, list) else answer


def write_answers(workdir: str, case: Case, variant: str, answers: dict) -> str:
    safe = re.sub(r"[^\w.-]+", "_", f"{case.id}-{variant}")
    path = Path(workdir) / f"{safe}.answers.yaml"
    path.write_text(yaml.safe_dump(answers, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return str(path)


# ---------------------------------------------------------------------------- aggregation


@dataclass
class Outcome:
    """A case over all its variants."""

    case: Case
    all_runs: list

    @property
    def runs(self) -> list:
        """The variants the case can be: those its sentence's reading does not rule out (all of
        them when it rules out every one)."""
        kept = [r for r in self.all_runs if not r.excluded]
        return kept or self.all_runs

    @property
    def reached_at(self) -> int | None:
        steps = [r.reached_at for r in self.runs]
        return None if any(s is None for s in steps) else max(steps)

    @property
    def wrong(self) -> bool:
        return any(r.wrong for r in self.runs)

    @property
    def wrong_reported(self) -> bool:
        return any(r.wrong_reported for r in self.runs)

    @property
    def wrong_rows(self) -> bool:
        return any(r.wrong_rows for r in self.runs)

    @property
    def table_hit(self) -> bool:
        return all(r.table_hit for r in self.runs)


def run_all(cases: list[Case], truths: dict, workdir: str) -> list[Outcome]:
    questions = question_table(workdir)
    jobs = [(case, variant) for case in cases for variant in case.variants]
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        runs = list(pool.map(lambda job: simulate(*job, truths, questions, workdir), jobs))
    by_case: dict[str, list] = {}
    for run in runs:
        by_case.setdefault((run.case.source, run.case.id), []).append(run)
    return [Outcome(case, by_case[(case.source, case.id)]) for case in cases]


@dataclass(frozen=True)
class Figures:
    n: int
    within: dict  # k -> count reached within k answers
    median: float | None
    table_hit: int
    wrong: int
    wrong_reported: int
    wrong_rows: int


def figures(outcomes: list[Outcome]) -> Figures:
    reached = [o.reached_at for o in outcomes if o.reached_at is not None]
    return Figures(
        n=len(outcomes),
        within={k: sum(1 for s in reached if s <= k) for k in WITHIN},
        median=statistics.median(reached) if reached else None,
        table_hit=sum(o.table_hit for o in outcomes),
        wrong=sum(o.wrong for o in outcomes),
        wrong_reported=sum(o.wrong_reported for o in outcomes),
        wrong_rows=sum(o.wrong_rows for o in outcomes),
    )


def quick_cases(truths: dict, workdir: str) -> list[Case]:
    return interview_cases(truths, workdir) + fixture_cases(truths)


def all_cases(truths: dict, workdir: str) -> list[Case]:
    return (
        corpus_cases(truths)
        + sentence_cases(truths, workdir)
        + fixture_cases(truths)
        + interview_cases(truths, workdir)
        + seeded_cases(truths, workdir)
    )


# ---------------------------------------------------------------------------- the report

GROUPS = (
    ("corpus pastes, development", "corpus", "development"),
    ("corpus pastes, held out", "corpus", "held_out"),
    ("sentences (`ask`), development", "sentence", "development"),
    ("sentences (`ask`), held out", "sentence", "held_out"),
    ("development (pastes + sentences)", None, "development"),
    ("held out (pastes + sentences)", None, "held_out"),
    ("real DDP fixtures (tests/fixtures/real)", "fixture", "fixtures"),
    ("interview cases (rules/causes.yaml)", "interview", "interview"),
    ("every cause variant, part of its truth told first", "seeded", "seeded"),
)


def select(outcomes: list[Outcome], source: str | None, group: str) -> list[Outcome]:
    return [
        o for o in outcomes if o.case.group == group and (source is None or o.case.source == source)
    ]


def pct(count: int, total: int) -> str:
    return f"{count}/{total} ({round(100 * count / total)}%)" if total else "0/0"


def table_lines(outcomes: list[Outcome]) -> list[str]:
    head = "| cases | n | " + " | ".join(f"≤{k}" for k in WITHIN)
    head += " | median | decision table | wrong | wrong (issue 20) | wrong rows |"
    lines = [head, "|---" * (len(WITHIN) + 7) + "|"]
    for label, source, group in GROUPS:
        chosen = select(outcomes, source, group)
        if not chosen:
            continue
        fig = figures(chosen)
        cells = [pct(fig.within[k], fig.n) for k in WITHIN]
        median = "–" if fig.median is None else f"{fig.median:g}"
        lines.append(
            f"| {label} | {fig.n} | "
            + " | ".join(cells)
            + f" | {median} | {pct(fig.table_hit, fig.n)} | {fig.wrong} | {fig.wrong_reported}"
            + f" | {fig.wrong_rows} |"
        )
    return lines


def describe_run(run: Run) -> str:
    given = ", ".join(f"{q}={a}" for q, a in run.given) or "none"
    extra = ""
    if run.wrong:
        extra += f"; WRONG: {', '.join(run.wrong)}"
    if run.wrong_reported:
        extra += f"; failing per issue 20: {', '.join(run.wrong_reported)}"
    if run.unclassified:
        extra += f"; not in the table: {', '.join(run.unclassified)}"
    return f"`{run.variant}`: answers {given} → {run.stop}{extra}"


def miss_lines(outcomes: list[Outcome]) -> list[str]:
    lines = []
    for label, source, group in GROUPS:
        if source is None:
            continue
        chosen = [o for o in select(outcomes, source, group) if o.reached_at is None or o.wrong]
        if not chosen:
            continue
        lines += ["", f"### {label}: {len(chosen)}", ""]
        for outcome in chosen:
            case = outcome.case
            name = case.id if case.text is None else f"{case.id} “{case.text[:70]}”"
            runs = [r for r in outcome.runs if r.reached_at is None or r.wrong]
            parts = "; ".join(describe_run(r) for r in runs)
            lines.append(f"- {name} — `{case.cause}`: {parts}")
    return lines


INTRO = """# Right-fix benchmark (issue 20)

Generated by `python bench/right_fix.py` (truth tables: `bench/truths.yaml`). A truthful user
is simulated through the public command line: the first report from the paste (`triage
--json`), the sentence (`ask --json`) or nothing (`--answers` empty: the interview cases), then
each report's `splitting_question` answered from the truth table of the case's cause ("unsure"
where that user would not know) with `--answers A --paste P --json`, until the report gives an
unconditional fix, asks nothing new, or {cap} answers were given.

Columns: **≤k** = a right fix (one that works for the cause over every variant the answers
leave open, per tests/ddp/measured.json) among the report's unconditional `fixes` after at most
k answers (cumulative); **median** = answers given, of the cases reached; **decision table** =
from the first report alone, a right fix unconditionally or a `conditional_fixes` row for a
right fix whose `when.answers` the truthful user gives; **wrong** = cases advised
(unconditionally) a fix measured to fail for the cause (must be 0); **wrong (issue 20)** = a fix
failing only by issue 20's item 7 (a rank branch that moves; not yet in measured.json); **wrong
rows** = a decision-table row for a failing fix whose condition the user's answers satisfy. A
case whose variant its source does not settle is played once per variant of its cause (e.g.
freeze and unfreeze) and counts as reached only if every variant is (its answers: the most any
variant needed).
"""

CASES_NOTE = """Cases: corpus pastes with a settled `cause` (tests/fixtures/real/corpus, by
`split`); every sentence of tests/fixtures/sentences/sentences.yaml (all have a settled
cause; questions.yaml holds questions about fixes, with no cause, and is left out); the real
DDP fixtures tests/fixtures/real/*.txt by scenario; the causes' interview cases
(rules/causes.yaml). A sentence goes into each `--answers` file as `said: SENTENCE`, which
`--answers` reads again as the session read the description (a saved session's answers file
keeps it the same way), so every fact it set stays. A sentence with a `family` is asked
with that family's first example from rules/signatures.yaml as `--paste`. Corpus pastes and
sentences are answered "unsure" about the framework unless bench/truths.yaml says which
(corpus only). "Part of its truth told first" (`--seeded`): every measured variant of every
cause, from its own error as the real DDP fixtures show it (else from its cause's interview
case), with one true answer, or two (one of them its cause's own), already given in the
`--answers` file, as a description read right would give them: whatever a new wording lets
the reader get, the rest of the way must still lead to a right fix (no sentence involved).
"""


def kept_before() -> str:
    """The "Before" section of the last RIGHT_FIX.md, kept across runs."""
    if not OUT.exists():
        return ""
    text = OUT.read_text(encoding="utf-8")
    match = re.search(r"## Before[^\n]*\n\n(.*?)\n\n## ", text, re.S)
    return match.group(1) if match else ""


def wrong_row_cases(outcomes: list[Outcome]) -> list[str]:
    """Each case whose first report has a decision-table row for a failing fix that its
    truthful user's answers satisfy, with those fixes."""
    runs = [r for o in outcomes for r in o.runs]
    return sorted(
        {f"{r.case.id} ({r.variant}): {', '.join(r.wrong_rows)}" for r in runs if r.wrong_rows}
    )


def write_report(outcomes: list[Outcome], truths: dict, session: list[str], before: str) -> None:
    runs = [r for o in outcomes for r in o.runs]
    unknown = sorted({u for r in runs for u in r.unknown})
    lost = sorted({fact for r in runs for fact in r.lost})
    unclassified = sorted({f for r in runs for f in r.unclassified})
    wrong_rows = wrong_row_cases(outcomes)
    lines = [INTRO.format(cap=MAX_ANSWERS)]
    if before:
        lines += ["## Before (main at 46027a5, 2026-12-04, when the benchmark was written)", ""]
        lines += [before, ""]
    lines += ["## Now", "", *table_lines(outcomes), ""]
    lines += [CASES_NOTE]
    if session:
        lines += ["## The interactive session (pexpect)", "", *session, ""]
    lines += ["## Misses and wrong advice", *miss_lines(outcomes), ""]
    lines += ["## Gaps the tables show", ""]
    lines.append(
        "- questions the truth tables cannot answer (answered `unsure`): "
        + (", ".join(f"`{u}`" for u in unknown) or "none")
    )
    lines.append(
        "- fixes advised that the tables do not classify (neither right nor failing): "
        + (", ".join(f"`{u}`" for u in unclassified) or "none")
    )
    lines.append(
        "- sentences `ask` did not read as a description (their interview starts bare): "
        + (", ".join(f"`{f}`" for f in lost) or "none")
    )
    lines.append(
        "- decision-table rows for a failing fix whose condition fits: "
        + ("; ".join(wrong_rows) or "none")
    )
    no_fix = sorted(
        f"{cause}/{name}"
        for cause, entry in truths["causes"].items()
        for name, variant in entry["variants"].items()
        if not variant["right"]
    )
    played = [r for o in outcomes for r in o.all_runs if o.case.source == "sentence"]
    lines.append(
        f"- sentence variant runs ruled out by the sentence's own reading: "
        f"{sum(r.excluded for r in played)} of {len(played)}"
    )
    lines.append("- variants with no proven fix today: " + ", ".join(f"`{v}`" for v in no_fix))
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")


# ---------------------------------------------------------------------------- the session sample


def session_sample(outcomes: list[Outcome], count: int, workdir: str) -> list[str]:
    """Drive the interactive session (pexpect) on `count` fixture cases; compare its questions
    with those the `--answers` path asked, and its first fix with the case's truth table."""
    try:
        import pexpect
    except ImportError:
        return ["pexpect is not installed: the session sample was skipped."]
    script = Path(sys.executable).with_name("ddp-doctor")
    if not script.exists():
        return ["the `ddp-doctor` console script is not installed: the session sample was skipped."]
    questions = {lang: question_table(workdir, lang) for lang in ("en", "zh")}
    titles = {lang: fix_titles(lang) for lang in ("en", "zh")}
    screens = {lang: session_texts(lang) for lang in ("en", "zh")}
    truths = load_truths()
    chosen = pick_session_cases(outcomes, count)
    lines, tally = [], {"right": 0, "same": 0, "extra": 0, "failed": 0, "zh": 0, "zh_right": 0}
    tally.update(read_back=0, corrected=0)
    for outcome in chosen:
        # a variant the sentence itself rules out is no user's (the `--answers` path skips it)
        run = next((r for r in outcome.runs if not r.excluded), outcome.runs[0])
        answers = truth_answers(truths, outcome.case, run.variant)
        said = outcome.case.text if outcome.case.source == "sentence" else None
        lang = outcome.case.lang
        try:
            asked, first_fix, read_back_answers = drive_session(
                pexpect,
                script,
                run.case.paste,
                answers,
                questions[lang],
                workdir,
                said,
                lang,
                screens[lang],
            )
        except Exception as exc:  # a hang or an unexpected screen: report it, do not stop
            lines.append(f"- {run.case.id}: the session run failed ({type(exc).__name__})")
            tally["failed"] += 1
            continue
        same = asked[: len(run.asked)] == run.asked
        table = truths["causes"][outcome.case.cause]["variants"][run.variant]
        right = first_fix is not None and titles[lang].get(first_fix) in set(table["right"])
        tally["right"] += right
        if lang == "zh":
            tally["zh"] += 1
            tally["zh_right"] += right
        tally["same"] += same
        tally["extra"] += max(0, len(asked) - len(run.asked))
        tally["read_back"] += len(read_back_answers)
        tally["corrected"] += sum(not kept for _, kept in read_back_answers)
        back = ", ".join(
            f"{q} ({'kept' if kept else 'CORRECTED'})" for q, kept in read_back_answers
        )
        verdict = "same questions" if same else "DIFFERENT questions"
        lines.append(
            f"- {run.case.id}: `--answers` asked {run.asked or 'nothing'}; the session asked "
            f"{asked or 'nothing'} — {verdict}"
            + ("" if len(asked) <= len(run.asked) else " (it asks on where `--answers` stopped)")
            + f"; its report's first fix: {first_fix or 'none'}"
            + (" (right)" if right else " (NOT a right fix)")
            + f" (`--answers`: {', '.join(run.fixes) or 'none'})"
            + (f"; readings asked back: {back}" if back else "")
        )
    head = [
        "Each case run with `ddp-doctor --lang en --paste P` in a pseudo-terminal (a sentence: no",
        "paste, the sentence typed where the session asks to describe the problem, in a session of",
        "its own language), every question",
        "answered with the same truthful answer (arrow keys), a reading of the sentence asked back",
        "kept when it is true (or the case does not settle it) and corrected otherwise; the",
        "questions the session asked,",
        "compared with the `--answers` path's (which stops at the first unconditional fix), and",
        "the first fix of the session's report against the case's truth table:",
        "",
        f"**{len(chosen)} cases: first fix right in {tally['right']}, the questions of "
        f"`--answers` asked first in {tally['same']}, {tally['extra']} questions asked beyond "
        f"them in all (the framework, a tailoring or checking question), "
        f"{tally['failed']} runs failed; the {tally['zh']} Chinese sentences were told to a "
        f"Chinese session (`--lang zh`), first fix right in {tally['zh_right']}; "
        f"{tally['read_back']} readings of a sentence asked back before the report (the fix "
        f"rested on them), {tally['corrected']} of them corrected by the truthful user.**",
        "",
    ]
    return head + lines


def fix_titles(lang: str = "en") -> dict[str, str]:
    """Each fix's title as the terminal shows it (code font dropped) -> its id."""
    data = yaml.safe_load((ROOT / "rules" / "fixes.yaml").read_text(encoding="utf-8"))
    return {f["title"][lang].replace("`", ""): f["id"] for f in data["fixes"]}


def pick_session_cases(outcomes: list[Outcome], count: int) -> list[Outcome]:
    """Cases with a paste (real DDP fixtures, then the corpus's), then the sentences with none:
    one per cause first (those that needed answers first), then the others, `count` in all."""
    playable_all = []
    for source in ("fixture", "corpus", "sentence"):
        # a sentence that comes with a family's paste cannot be told to the session, which
        # asks for a description only when there is no error to read
        playable = [
            o
            for o in outcomes
            if o.case.source == source and bool(o.case.paste) == (source != "sentence")
        ]
        playable_all += [o for o in playable if o.runs[0].asked]
        playable_all += [o for o in playable if not o.runs[0].asked]
    seen, first, rest = set(), [], []
    for outcome in playable_all:
        (rest if outcome.case.cause in seen else first).append(outcome)
        seen.add(outcome.case.cause)
    return (first + rest)[:count]


ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[()][0-9A-B]|\x1b[=>]")


def session_texts(lang: str) -> dict[str, str]:
    """The session's own words the driver waits for, in `lang` (rules/messages)."""
    texts = {}
    for name in ("session.yaml", "core.yaml"):
        data = yaml.safe_load((ROOT / "rules" / "messages" / name).read_text(encoding="utf-8"))
        texts.update({key: value[lang] for key, value in data.items()})
    return texts


def drive_session(
    pexpect,
    script: Path,
    paste: str | None,
    answers: dict,
    questions: dict,
    workdir: str,
    said: str | None = None,
    lang: str = "en",
    screen_text: dict[str, str] | None = None,
):
    env = {**os.environ, "PROMPT_TOOLKIT_NO_CPR": "1", "TERM": "xterm", "COLUMNS": "200"}
    env.pop("NO_COLOR", None)
    screen_text = screen_text or session_texts(lang)
    ends = "|".join(  # the report is on screen once the session asks what to do with it
        re.escape(screen_text[key][:12]) for key in ("session_more_confirm", "session_save_confirm")
    )
    child = pexpect.spawn(
        str(script),
        ["--lang", lang, *(["--paste", paste] if paste else [])],
        env=env,
        dimensions=(50, 200),
        encoding="utf-8",
        timeout=30,
        cwd=workdir,
    )
    asked, first_fix, read_back_answers = [], None, []
    try:
        if said is not None:  # nothing to paste: Enter skips it, then the problem in a sentence
            child.expect(re.escape(screen_text["session_paste_prompt"][-12:]))
            child.send("\r")
            child.expect(re.escape(screen_text["session_describe_prompt"][:12]))
            child.send(said.replace("\n", " ") + "\r")
        # the heading above a reading asked back is printed once (its prompt is redrawn)
        heading = re.escape(screen_text["session_reading_heading"][:20])
        while True:
            hint = re.escape(screen_text["session_select_hint"])
            index = child.expect([hint, heading, ends, pexpect.EOF])
            if index == 1:  # a reading of the sentence asked back: kept only if it is true
                child.expect_exact(screen_text["session_reading_confirm"])
                qid, kept = read_back(child.before, answers, questions)
                read_back_answers.append((qid, kept))
                child.send("y" if kept else "n")
                continue
            if index != 0:
                shown = re.search(
                    re.escape(screen_text["fixes_heading"]) + r" 1[:：] ?([^\n]+)",
                    ANSI.sub("", child.before or ""),
                )
                first_fix = shown.group(1).strip() if shown else None
                break
            screen = ANSI.sub("", child.before)
            qid, module = identify(screen, questions)
            options = shown_options(
                screen + ANSI.sub("", drawn_options(pexpect, child)), questions[qid]
            )
            key = f"{qid}:{module}" if module else qid
            asked.append(key)
            answer = first_fitting(answers.get(key, answers.get(qid, "unsure")), options)
            position = options.index(answer) if answer in options else options.index("unsure")
            # no option is chosen until an arrow key moves onto one: the first Down is option 1
            child.send("\x1b[B" * (position + 1) + "\r")
    finally:
        child.sendcontrol("c")
        child.close(force=True)
    return asked, first_fix, read_back_answers


def read_back(before: str, answers: dict, questions: dict) -> tuple[str, bool]:
    """(question, kept): whether the truthful user keeps the reading the session asks back
    ("question → option", the last question on the screen). One whose truth the case does not
    settle is kept: the user wrote it."""
    screen = ANSI.sub("", before or "")
    qid, _ = identify(screen, questions)
    tail = screen.replace("\r", "").replace("`", "")[-600:]
    shown = tail[tail.rfind(questions[qid]["text"].replace("`", "")) :]
    read = next(
        (
            o["value"]
            for o in questions[qid]["options"]
            if f"→ {o['label'].replace('`', '')}" in shown
        ),
        None,
    )
    truth = answers.get(qid, "unsure")
    kept = truth == "unsure" or read == truth or (isinstance(truth, list) and read in truth)
    return qid, kept


def drawn_options(pexpect, child) -> str:
    """What the prompt draws after its hint: the options come after "(↑↓ and Enter)", so the
    screen up to the hint never lists them (and every option would be taken as offered)."""
    drawn, child.buffer = child.buffer, ""  # what `expect` read past the hint
    while True:
        try:
            drawn += child.read_nonblocking(65536, timeout=0.3)
        except (pexpect.TIMEOUT, pexpect.EOF):  # quiet for 0.3 s: the prompt is drawn
            return drawn


def shown_options(screen: str, question: dict) -> list[str]:
    """The values of the question's options the screen lists (an option may be offered only
    for some errors: `offer_when`), in their order."""
    tail = screen.replace("\r", "").replace("`", "")[-3000:]
    after = tail.rfind(question["text"].replace("`", "").split("{module}")[0])
    listed = tail[after:] if after >= 0 else tail
    shown = [o for o in question["options"] if o["label"].replace("`", "") in listed]
    return [o["value"] for o in shown] or [o["value"] for o in question["options"]]


def identify(screen: str, questions: dict) -> tuple[str, str | None]:
    """The question whose text ends the screen, and the module it names."""
    tail = screen.replace("\r", "")[-600:]
    best = None
    for qid, question in questions.items():
        pattern = re.escape(question["text"]).replace(re.escape("{module}"), "(?P<module>.+?)")
        for match in re.finditer(pattern, tail):
            if best is None or match.start() > best[0]:
                best = (match.start(), qid, match.groupdict().get("module"))
    if best is None:
        raise LookupError("no known question on the screen")
    return best[1], best[2]


# ---------------------------------------------------------------------------- --corpus


def reading_lines(folder: Path, workdir: str) -> list[str]:
    """What `triage --json` reads in each paste of `folder`, against its .yaml: the family, the
    names and indices, and the thread's cause among the first one and two causes."""
    lines = ["| paste | split | family (expected → read) | names/indices | cause | top-1 | top-2 |"]
    lines.append("|---" * 7 + "|")
    totals = {"family": [0, 0], "names": [0, 0], "top-1": [0, 0], "top-2": [0, 0]}
    for meta_path in sorted(folder.glob("*.yaml")):
        meta = yaml.safe_load(meta_path.read_text(encoding="utf-8"))
        report = run_cli(["triage", str(meta_path.with_suffix(".txt"))], workdir)
        findings = report.get("findings") or []
        family = (report.get("family") or "none") if findings else "none"
        names = {n for f in findings for n in f.get("unused_parameter_names") or []}
        indices = {i for f in findings for i in f.get("unused_parameter_indices") or []}
        want_indices = meta.get("indices") or []
        if isinstance(want_indices, str):
            low, high = (int(v) for v in want_indices.split("-"))
            want_indices = range(low, high + 1)
        causes = [c["id"] for c in report.get("causes") or []] if findings else []
        marks = {"family": family == meta["family"]}
        if meta.get("names") or want_indices:
            marks["names"] = names == set(meta.get("names") or []) and indices == set(want_indices)
        if meta.get("cause"):
            marks["top-1"] = meta["cause"] in causes[:1]
            marks["top-2"] = meta["cause"] in causes[:2]
        for key, ok in marks.items():
            totals[key][0] += ok
            totals[key][1] += 1
        cells = [
            ("ok" if marks[k] else "MISS") if k in marks else "–"
            for k in ("names", "top-1", "top-2")
        ]
        lines.append(
            f"| {meta_path.stem} | {meta.get('split', 'development')} | {meta['family']} → "
            f"{family} | {cells[0]} | {meta.get('cause') or '–'} "
            f"({', '.join(causes[:2]) or 'none'}) | {cells[1]} | {cells[2]} |"
        )
    lines.append("")
    lines.append(", ".join(f"{k} {ok}/{n}" for k, (ok, n) in totals.items()))
    return lines


# ---------------------------------------------------------------------------- --check


def check_tables(truths: dict) -> list[str]:
    """Each right / failing entry against tests/ddp/measured.json, where it was measured."""
    measured = json.loads(MEASURED.read_text(encoding="utf-8"))
    results: dict[tuple[str, frozenset], str] = {}
    for key, value in measured.items():
        if "|" not in key:
            continue
        scenario, fixes = key.split("|", 1)
        results[(scenario, frozenset(fixes.split("+")))] = value["result"]
    problems, agree = [], 0
    for cause, entry in truths["causes"].items():
        for name, variant in entry["variants"].items():
            scenarios = []
            for scenario in variant.get("scenarios") or []:
                base, _, flags = scenario.partition(".")
                scenarios.append(
                    (scenario, base, frozenset(flags.split("+")) if flags else frozenset())
                )
            for fix in variant["right"]:
                for scenario, base, pre in scenarios:
                    got = lookup(results, base, pre, fix)
                    if got in ("error", "wrong"):
                        problems.append(f"{cause}/{name}: right {fix} is {got} on {scenario}")
                    agree += got == "works"
            for fix in variant.get("failing") or []:
                got = [lookup(results, base, pre, fix) for _, base, pre in scenarios]
                if any(g in ("error", "wrong") for g in got):
                    agree += 1
                elif "works" in got:
                    problems.append(f"{cause}/{name}: failing {fix} works wherever it was measured")
    return [f"{agree} table entries agree with measured results", *problems]


# The code a fix's printed change runs, where it is not the fix's own code path (rules/fixes.yaml):
# tried in order; a path the scenario has no code for (n/a) gives way to the next
PRINTED_PATHS = {
    "drop_unused_outputs": (
        frozenset({"drop_unused_outputs"}),
        frozenset({"drop_unused_outputs", "find_unused_parameters"}),
    ),
    "checkpoint_non_reentrant_with_flag": (
        frozenset({"checkpoint_non_reentrant", "find_unused_parameters"}),
    ),
    # "the flag, and use_reentrant=False if you checkpoint": without checkpointing, the flag alone
    "find_unused_parameters_any_checkpointing": (
        frozenset({"checkpoint_non_reentrant", "find_unused_parameters"}),
        frozenset({"find_unused_parameters"}),
    ),
}


def lookup(results: dict, scenario: str, pre: frozenset, fix: str) -> str | None:
    """The measured result of `fix` applied to `scenario` with the fixes `pre` already on."""
    for parts in PRINTED_PATHS.get(fix, (frozenset({fix}),)):
        result = results.get((scenario, pre | parts))
        if result is not None and result != "n/a":
            return result
    return None


# ---------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fixtures and interview cases only")
    parser.add_argument("--session", type=int, default=0, help="cases run through the session")
    parser.add_argument("--check", action="store_true", help="check the tables; run nothing")
    parser.add_argument("--misses", action="store_true", help="also print the misses")
    parser.add_argument("--before", default="", help="a file whose text is the 'before' section")
    parser.add_argument("--json", dest="json_out", help="also write the per-case results here")
    parser.add_argument(
        "--seeded",
        action="store_true",
        help="only every cause variant with part of its truth told first; prints",
    )
    parser.add_argument(
        "--sentences",
        metavar="FILE",
        help="only the sentences of FILE (a fresh batch); prints the table, writes nothing",
    )
    parser.add_argument(
        "--corpus",
        metavar="DIR",
        help="only the pastes of DIR (a fresh batch, corpus format); prints, writes nothing",
    )
    parser.add_argument(
        "--several-losses",
        nargs="?",
        const="own",
        choices=("own", "first"),
        help="the fixtures played by users who also sum several losses, all in the total; "
        "'first': they answer the training-step list with 'several losses', as its first "
        "answer asked of them until 2edf460 ('Several tasks or losses are added into one "
        "loss'); prints",
    )
    args = parser.parse_args(argv)
    truths = load_truths()
    if args.several_losses:
        with tempfile.TemporaryDirectory(prefix="right-fix-") as workdir:
            cases = several_losses_cases(truths, args.several_losses == "first")
            outcomes = run_all(cases, truths, workdir)
            print("\n".join(table_lines(outcomes)))
        return 0
    if args.check:
        print("\n".join(check_tables(truths)))
        return 0
    if args.seeded:
        with tempfile.TemporaryDirectory(prefix="right-fix-") as workdir:
            outcomes = run_all(seeded_cases(truths, workdir), truths, workdir)
            print("\n".join(table_lines(outcomes)))
            print("\n".join(miss_lines(outcomes)))
        return 0
    if args.sentences:
        with tempfile.TemporaryDirectory(prefix="right-fix-") as workdir:
            cases = sentence_cases(truths, workdir, Path(args.sentences))
            outcomes = run_all(cases, truths, workdir)
            print("\n".join(table_lines(outcomes)))
            print("\n".join(miss_lines(outcomes)))
            print("\nwrong rows:", "; ".join(wrong_row_cases(outcomes)) or "none")
            if args.session:  # the same sentences told to the interactive session
                print("\n".join(session_sample(outcomes, args.session, workdir)))
        return 0
    if args.corpus:
        folder = Path(args.corpus).resolve()  # the CLI runs in a temporary directory
        with tempfile.TemporaryDirectory(prefix="right-fix-") as workdir:
            print("\n".join(reading_lines(folder, workdir)), "\n")
            outcomes = run_all(corpus_cases(truths, folder), truths, workdir)
            print("\n".join(table_lines(outcomes)))
            print("\n".join(miss_lines(outcomes)))
            if args.json_out:
                write_json(outcomes, Path(args.json_out))
        return 0
    with tempfile.TemporaryDirectory(prefix="right-fix-") as workdir:
        cases = quick_cases(truths, workdir) if args.quick else all_cases(truths, workdir)
        outcomes = run_all(cases, truths, workdir)
        print("\n".join(table_lines(outcomes)))
        if args.misses:
            print("\n".join(miss_lines(outcomes)))
        if args.quick:
            return 0
        session = session_sample(outcomes, args.session, workdir) if args.session else []
        before = Path(args.before).read_text(encoding="utf-8") if args.before else kept_before()
        write_report(outcomes, truths, session, before)
        if args.json_out:
            write_json(outcomes, Path(args.json_out))
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


def write_json(outcomes: list[Outcome], path: Path) -> None:
    """The per-case results (`--json`)."""
    dump = [
        {
            "case": o.case.id,
            "source": o.case.source,
            "group": o.case.group,
            "cause": o.case.cause,
            "reached_at": o.reached_at,
            "runs": [
                {"variant": r.variant, "given": r.given, "stop": r.stop, "fixes": r.fixes}
                for r in o.runs
            ],
        }
        for o in outcomes
    ]
    path.write_text(json.dumps(dump, indent=1), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
