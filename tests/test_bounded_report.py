"""What the report shows of a log is bounded: a huge name is cut in the middle in prose (code
keeps it whole: it must run), a huge list is summarised with a count, in every format and
both languages (issue 22, item 6). Sizes, not times: bench/ has the times."""

from __future__ import annotations

import json

import pytest
from helpers import cli

HEAD = (
    "RuntimeError: Expected to have finished reduction in the prior iteration before starting "
    "a new one. This error indicates that your module has parameters that were not used in "
    "producing loss.\n"
)
HEADER = "Parameters which did not receive grad for rank 0: "
HUGE = "blocks." + "a" * (256 << 10)  # one 256 KiB module name


@pytest.fixture(scope="module")
def huge_name_log(tmp_path_factory):
    path = tmp_path_factory.mktemp("bounded") / "huge-name.log"
    path.write_text(HEAD + HEADER + f"{HUGE}.weight, aux.bias\n")
    return path


@pytest.fixture(scope="module")
def many_names_log(tmp_path_factory):
    path = tmp_path_factory.mktemp("bounded") / "many-names.log"
    names = ", ".join(f"m{i}.weight" for i in range(60_000))
    path.write_text(HEAD + HEADER + names + "\n")
    return path


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("fmt", ["markdown", "rich"])
def test_a_huge_name_appears_whole_only_in_code(huge_name_log, fmt, lang):
    done = cli("triage", str(huge_name_log), "--format", fmt, "--all", "--lang", lang)
    assert done.returncode == 0, done.err
    whole = [line for line in done.out.splitlines() if HUGE in line]
    # the snippets that freeze or touch the module name it exactly; nothing else does
    assert whole and all("requires_grad_" in line or "parameters()" in line for line in whole)
    assert "…" in done.out  # the rows and sentences show it cut in the middle
    # before: 7 copies (1.8 MB); now one per snippet that must name the module to run as
    # printed (freeze it, the zero-weighted term over its parameters), with --all printing
    # the code of every fix the decision table names
    assert done.out.count(HUGE) <= 3 and len(done.out) < 4 * len(HUGE)


def test_json_keeps_the_huge_name_whole(huge_name_log):
    done = cli("triage", str(huge_name_log), "--json")
    finding = json.loads(done.out)["findings"][0]
    assert f"{HUGE}.weight" in finding["unused_parameter_names"]


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("fmt", ["markdown", "rich"])
def test_sixty_thousand_names_are_summarised_with_a_count(many_names_log, fmt, lang):
    done = cli("triage", str(many_names_log), "--format", fmt, "--all", "--lang", lang)
    assert done.returncode == 0, done.err
    assert "(+59988)" in done.out  # the parameters row: 12 names and how many more
    assert "m59999.weight" not in done.out
    assert len(done.out) < 50_000  # before: about 1 MB, most of it the names in a code comment


def test_json_keeps_every_name(many_names_log):
    done = cli("triage", str(many_names_log), "--json")
    assert len(json.loads(done.out)["findings"][0]["unused_parameter_names"]) == 60_000
