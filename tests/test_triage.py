"""Triage on real-looking pastes: the family and everything the text reveals."""

from __future__ import annotations

import json

from ddp_doctor.knowledge import kb as kb_module
from ddp_doctor.reading.triage import Scanner, group_modules, summarise, triage_text
from helpers import FIXTURES, cli, has_chinese

KB = kb_module.load()

TORCH_213 = """Traceback (most recent call last):
  File "/home/me/proj/train.py", line 88, in <module>
    out = model(batch)
  File "/opt/venv/lib/python3.11/site-packages/torch/nn/parallel/distributed.py", line 1775, in _pre_forward
    if torch.is_grad_enabled() and self.reducer._rebuild_buckets():
                                   ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one. This error indicates that your module has parameters that were not used in producing loss. You can enable unused parameter detection by passing the keyword argument `find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`, and by 
making sure all `forward` function outputs participate in calculating loss. 
If you already have done the above, then the distributed data parallel module wasn't able to locate the output tensors in the return value of your module's `forward` function. Please include the loss function and the structure of the return value of `forward` of your module when reporting this issue (e.g. list, dict, iterable).
Parameters which did not receive grad for rank {rank}: {names}
Parameter indices which did not receive grad for rank {rank}: {indices}
"""  # noqa: W291 - the trailing spaces are PyTorch's


def error(rank=1, names="decoder.aux_head.bias, decoder.aux_head.weight", indices="6 7"):
    return TORCH_213.format(rank=rank, names=names, indices=indices)


def prefixed(text: str, rank: int) -> str:
    return "".join(f"[rank{rank}]:{line}\n" for line in text.splitlines())


def test_names_indices_modules_rank_and_user_frame():
    result = triage_text(KB, error())
    (finding,) = result.findings
    assert finding.family == "unfinished_reduction"
    assert finding.ranks == (1,)
    assert finding.unused_parameter_names == ("decoder.aux_head.bias", "decoder.aux_head.weight")
    assert finding.unused_parameter_indices == (6, 7)
    assert finding.unused_modules == ("decoder.aux_head",)
    assert finding.find_unused_parameters_enabled is False
    assert [(f.file, f.line, f.code) for f in finding.user_frames] == [
        ("/home/me/proj/train.py", 88, "out = model(batch)")
    ]
    assert result.facts["has_param_names"] is True


def test_old_wordings_from_1_1_to_1_10():
    for name, flag in [
        ("torch_1_1.txt", None),
        ("torch_1_8_cxx_frames.txt", None),
        ("torch_1_10_flag_on.txt", True),
    ]:
        result = triage_text(KB, (FIXTURES / "versions" / name).read_text())
        assert result.findings[0].family == "unfinished_reduction", name
        assert result.findings[0].find_unused_parameters_enabled is flag, name
    flag_on = triage_text(KB, (FIXTURES / "versions" / "torch_1_10_flag_on.txt").read_text())
    assert flag_on.findings[0].unused_parameter_indices == (158, 159, 160, 161)
    assert flag_on.findings[0].ranks == (0,)


def test_lightning_message_is_the_same_family_and_reveals_the_framework():
    result = triage_text(KB, (FIXTURES / "versions" / "lightning_2.txt").read_text())
    assert result.findings[0].family == "unfinished_reduction"
    assert result.facts["framework"] == "lightning"


def test_torchrun_prefixes_ansi_colours_and_crlf_are_normalised():
    text = prefixed(error(rank=3), 3).replace("RuntimeError", "\x1b[31mRuntimeError\x1b[0m")
    result = triage_text(KB, text.replace("\n", "\r\n"))
    (finding,) = result.findings
    assert finding.ranks == (3,)
    assert finding.unused_modules == ("decoder.aux_head",)


def test_interleaved_ranks_give_one_finding_each():
    rank0 = prefixed(error(rank=0), 0).splitlines(keepends=True)
    rank1 = prefixed(error(rank=1), 1).splitlines(keepends=True)
    mixed = "".join(a + b for a, b in zip(rank0, rank1))
    result = triage_text(KB, mixed)
    assert sorted(f.ranks for f in result.findings) == [(0,), (1,)]
    assert all(f.unused_modules == ("decoder.aux_head",) for f in result.findings)
    assert result.facts["ranks_disagree"] is False


def test_ranks_naming_different_parameters_point_to_a_branch():
    text = prefixed(error(rank=0, names="moe.expert2.weight", indices="9"), 0) + prefixed(
        error(rank=1, names="moe.expert5.weight", indices="15"), 1
    )
    result = triage_text(KB, text)
    assert result.facts["ranks_disagree"] is True


def test_the_same_error_printed_twice_is_one_finding():
    result = triage_text(KB, error() + "\nsome other line\n" + error())
    (finding,) = result.findings
    assert finding.occurrences == 2


def test_static_graph_error_is_told_apart_from_the_seed_error():
    text = (
        "RuntimeError: Expected to have finished reduction in the prior iteration before "
        "starting a new one. This error indicates that your training graph has changed in this "
        "iteration, e.g., one parameter is used in first iteration, but then got unused in the "
        "second iteration. this is not compatible with static_graph set to True.\n"
        "Parameter indices which did not receive grad for rank 0: 4 5\n"
    )
    (finding,) = triage_text(KB, text).findings
    assert finding.family == "static_graph_changed"
    assert finding.unused_parameter_indices == (4, 5)


def test_mark_ready_twice_names_the_parameter():
    text = (
        "RuntimeError: Expected to mark a variable ready only once. This error is caused by one "
        "of the following reasons: 1) Use of a module parameter outside the `forward` function.\n"
        "Parameter at index 3 with name fc2.bias has been marked as ready twice. This means that "
        "multiple autograd engine  hooks have fired for this particular parameter during this "
        "iteration.\n"
    )
    (finding,) = triage_text(KB, text).findings
    assert finding.family == "mark_ready_twice"
    assert finding.unused_parameter_names == ("fc2.bias",)
    assert finding.unused_parameter_indices == (3,)


def test_an_error_split_across_read_blocks_is_still_found():
    text = ("noise line\n" * 500_000) + error() + ("more noise\n" * 10)
    data = text.encode()
    anchor = data.index(b"Expected to have finished")
    scanner = Scanner(KB, "big.log")
    # cut the stream in the middle of the anchor and in the middle of the names line
    cuts = [0, anchor + 10, data.index(b"decoder.aux") + 4, len(data)]
    for start, end in zip(cuts, cuts[1:]):
        scanner.feed(data[start:end])
    (finding,) = summarise(KB, [scanner]).findings
    assert finding.unused_modules == ("decoder.aux_head",)
    assert finding.line == 500_000 + 7  # the RuntimeError line, counted across blocks


def test_torch_version_from_the_log_head():
    text = "Collecting environment information...\nPyTorch version: 2.1.2+cu121\n" + error()
    assert triage_text(KB, text).findings[0].torch_version == "2.1.2+cu121"


def test_module_grouping():
    names = ["module.layers.3.attn.q.weight", "layers.3.attn.q.bias", "head.weight", "scale"]
    assert group_modules(names) == ("layers.3.attn.q", "head", "scale")


def test_cli_json_contract(tmp_path):
    log = tmp_path / "rank1.log"
    log.write_text(prefixed(error(), 1))
    result = cli("triage", "--json", str(log))
    assert result.returncode == 0, result.err
    doc = json.loads(result.out)
    assert doc["schema_version"] == 2
    (finding,) = doc["findings"]
    for key in (
        "family",
        "ranks",
        "unused_parameter_indices",
        "unused_parameter_names",
        "unused_modules",
        "torch_version",
        "find_unused_parameters_enabled",
        "user_frames",
    ):
        assert key in finding
    assert finding["unused_modules"] == ["decoder.aux_head"]
    assert finding["user_frames"][0]["file"] == "/home/me/proj/train.py"
    assert doc["causes"] and {"id", "score", "reason"} <= set(doc["causes"][0])
    # a bare paste proves no fix for every cause: a decision table and the question instead
    assert doc["fixes"] == []
    row = doc["conditional_fixes"][0]
    assert {"id", "title", "snippet", "when"} <= set(row)
    assert row["when"]["question"] == doc["splitting_question"]["id"]
    assert row["when"]["facts"] and row["when"]["text"]
    assert set(doc["plausible_causes"]) >= {c["id"] for c in doc["causes"]}
    scores = [c["score"] for c in doc["causes"]]
    assert scores == sorted(scores, reverse=True)


def test_several_files_one_per_rank(tmp_path):
    (tmp_path / "r0.log").write_text(error(rank=0, names="a.weight", indices="1"))
    (tmp_path / "r1.log").write_text(error(rank=1, names="b.weight", indices="2"))
    result = cli("triage", "--json", str(tmp_path / "r0.log"), str(tmp_path / "r1.log"))
    doc = json.loads(result.out)
    assert [f["source"].rsplit("/", 1)[-1] for f in doc["findings"]] == ["r0.log", "r1.log"]
    assert doc["facts"]["ranks_disagree"] is True
    assert doc["causes"][0]["id"] == "conditional_branch"


def test_markdown_report_in_both_languages():
    en = cli("triage", "--format", "markdown", "--lang", "en", "-", input=error())
    zh = cli("triage", "--format", "markdown", "--lang", "zh", "-", input=error())
    assert en.returncode == zh.returncode == 0
    assert "decoder.aux_head" in en.out and "decoder.aux_head" in zh.out
    assert "```python" in en.out
    assert has_chinese(zh.out) and not has_chinese(en.out)


def test_locale_picks_chinese():
    result = cli("triage", "-", input=error(), env={"LANG": "zh_CN.UTF-8", "LC_ALL": ""})
    assert has_chinese(result.out)


def test_no_known_error_has_its_own_exit_code():
    result = cli("triage", "-", input="loss=0.25 step=100\nall good\n")
    assert result.returncode == 1
    assert "No DDP error" in result.out


def test_snippets_use_the_real_module_names():
    result = cli("triage", "--json", "-", input=error(names="encoder.layers.3.proj.weight"))
    doc = json.loads(result.out)
    snippets = "\n".join(f["snippet"] for f in doc["fixes"] + doc["conditional_fixes"])
    assert "model.encoder.layers[3].proj" in snippets


def test_a_paste_without_names_says_how_to_get_them():
    without = cli(
        "triage",
        "--json",
        "-",
        input=(FIXTURES / "versions" / "torch_1_8_cxx_frames.txt").read_text(),
    )
    with_names = cli("triage", "--json", "-", input=error())
    assert any("TORCH_DISTRIBUTED_DEBUG=INFO" in n for n in json.loads(without.out)["notes"])
    assert not any("TORCH_DISTRIBUTED_DEBUG" in n for n in json.loads(with_names.out)["notes"])
