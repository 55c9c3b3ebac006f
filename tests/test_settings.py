"""Knowledge that used to be Python constants is rules data (issue 9 part 5): the default
family, how many diagnostics a report shows and run's tip are settings a rules directory can
change, checked at load time. Driven through the CLI with `--rules DIR`."""

from __future__ import annotations

import json

from helpers import FIXTURES, cli

ERROR = str(FIXTURES / "versions" / "torch_1_10_flag_on.txt")


def test_shown_diagnostics_is_a_setting(tmp_path):
    base = json.loads(cli("triage", ERROR, "--json").out)
    assert len(base["diagnostics"]) > 1  # otherwise this test could not fail
    (tmp_path / "causes.yaml").write_text("engine:\n  shown_diagnostics: 1\ncauses: []\n")
    done = cli("--rules", str(tmp_path), "triage", ERROR, "--json")
    assert done.returncode == 0, done.err
    assert len(json.loads(done.out)["diagnostics"]) == 1


def test_the_default_family_is_a_setting(tmp_path):
    answers = tmp_path / "answers.yaml"
    answers.write_text("{}\n")
    base = json.loads(cli("--answers", str(answers), "--json").out)
    assert base["facts"]["family"] == "unfinished_reduction"
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "causes.yaml").write_text("engine:\n  default_family: mark_ready_twice\ncauses: []\n")
    done = cli("--rules", str(rules), "--answers", str(answers), "--json")
    assert done.returncode == 0, done.err
    assert json.loads(done.out)["facts"]["family"] == "mark_ready_twice"


def test_a_default_family_that_does_not_exist_is_a_rules_error(tmp_path):
    (tmp_path / "causes.yaml").write_text("engine:\n  default_family: no_such_family\ncauses: []\n")
    done = cli("--rules", str(tmp_path), "triage", ERROR)
    assert done.returncode == 4
    assert "causes.yaml" in done.err and "no_such_family" in done.err
    assert "Traceback" not in done.err


def test_a_tip_naming_no_message_is_a_rules_error(tmp_path):
    (tmp_path / "signatures.yaml").write_text(
        "families:\n"
        "  - id: unused_params_warning\n"
        "    severity: warning\n"
        "    tip: no_such_message\n"
        "    title: {en: t, zh: 标题}\n"
        "    summary: {en: s, zh: 摘要}\n"
        "    anchors: ['find_unused_parameters=True']\n"
        "    patterns: ['find_unused_parameters=True']\n"
        "    examples: {positive: [{text: 'find_unused_parameters=True x'}], negative: [{text: 'nothing'}]}\n"
    )
    done = cli("--rules", str(tmp_path), "triage", ERROR)
    assert done.returncode == 4
    assert "no_such_message" in done.err and "Traceback" not in done.err


def test_how_many_found_errors_the_interview_lists_is_a_setting(tmp_path):
    """A paste with three different errors: the interview lists `shown_findings` of them."""
    import io

    from ddp_doctor.common.record import replace
    from ddp_doctor.knowledge.kb import load
    from ddp_doctor.talk.session import run_session
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput
    from rich.console import Console

    paste = tmp_path / "three.log"
    paste.write_text(
        (FIXTURES / "versions" / "torch_1_10_flag_on.txt").read_text(encoding="utf-8")
        + "\nRuntimeError: Expected to mark a variable ready only once. This error is caused by\n"
        + "RuntimeError: Trying to backward through the graph a second time (or directly access"
        " saved tensors after they have already been freed).\n",
        encoding="utf-8",
    )
    kb = load()

    def found_lines(shown: int) -> list[str]:
        limited = replace(kb, engine={**kb.engine, "shown_findings": shown})
        out = io.StringIO()
        with create_pipe_input() as keys:
            keys.close()  # no answers: the session ends at its first question
            run_session(
                limited,
                "en",
                str(paste),
                console=Console(file=out, width=160, color_system=None),
                prompt_input=keys,
                prompt_output=DummyOutput(),
            )
        return [row for row in out.getvalue().splitlines() if "Found:" in row]

    assert len(found_lines(3)) == 3  # otherwise this test could not fail
    assert len(found_lines(1)) == 1
