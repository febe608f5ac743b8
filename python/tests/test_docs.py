"""The Python examples of the docs run as written: every ```python block of python/README.md,
of the guide's "From Python" chapter and of README.md's "From Python" section, each file's
blocks in order in one namespace, in a scratch folder (the files they write land there), with
`examples/` meaning the repository's. The "Scale out" chapter's blocks (a thousand renders,
a Ray cluster) are covered by test_batch.py and test_ray.py instead."""

import os
import re

import numpy as np
import pytest

from support import REPO

DOCS = {
    "python/README.md": None,
    "docs/guide/src/start/python.md": None,
    "README.md": "## From Python",
}


def blocks(path, section):
    text = (REPO / path).read_text()
    if section:
        start = text.index(section)
        end = text.find("\n## ", start + len(section))
        text = text[start : end if end > 0 else len(text)]
    return re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)


@pytest.mark.parametrize("path", list(DOCS))
def test_the_python_examples_run_as_written(path, tmp_path, monkeypatch):
    found = blocks(path, DOCS[path])
    assert found, f"{path} has no Python example"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    # What the README's effect chain takes as input before it has defined any.
    namespace = {"dry": np.zeros((2, 48000), np.float32)}
    for i, code in enumerate(found):
        code = code.replace('"examples/', f'"{REPO}/examples/')
        try:
            exec(compile(code, f"{path}, example {i + 1}", "exec"), namespace)
        except Exception as e:  # noqa: BLE001 - reported with the example that failed
            pytest.fail(f"{path}, example {i + 1}: {type(e).__name__}: {e}\n{code}")
    assert os.getcwd() == str(tmp_path)
