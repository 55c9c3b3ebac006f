"""docs/fix-matrix.md is what `python tests/ddp/matrix_doc.py` writes today (no torch:
the paths read captured texts, the results come from tests/ddp/measured.json)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import matrix  # noqa: E402
import matrix_doc  # noqa: E402


def test_fix_matrix_document_is_current():
    current = matrix.MATRIX_DOC.read_text(encoding="utf-8")
    assert current == matrix_doc.current_document(), (
        "docs/fix-matrix.md is stale (the rules, the engine or the recorded results changed): "
        "run `python tests/ddp/matrix_doc.py` and commit the document"
    )


def test_every_case_has_its_captured_texts():
    missing = [
        f"{c.name}/{name}"
        for c in matrix.CASES
        for text, name in matrix.TEXT_FILES.items()
        if not matrix.text_path(c, text).exists()
    ]
    assert not missing, f"run python tests/ddp/make_fixtures.py --matrix: {missing}"


def test_every_shown_fix_has_a_recorded_result():
    """A fix a path shows (advised, conditional or warned) is never 'not measured'."""
    document = matrix.MATRIX_DOC.read_text(encoding="utf-8")
    assert "not measured" not in document.split("## ")[0]
