"""The examples of docs/python.md run, in order and in one namespace, in a scratch folder."""
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "python.md"


def code_blocks(text):
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def test_docs_have_examples():
    assert len(code_blocks(DOC.read_text(encoding="utf-8"))) >= 8


def test_docs_python_examples_run(tmp_path, monkeypatch):
    pytest.importorskip("xarray")
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "docs_python"}
    for i, block in enumerate(code_blocks(DOC.read_text(encoding="utf-8"))):
        try:
            exec(compile(block, f"docs/python.md[block {i + 1}]", "exec"), namespace)
        except Exception as exc:
            raise AssertionError(f"docs/python.md block {i + 1} failed: {exc!r}\n{block}") from exc
