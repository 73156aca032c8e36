"""CI executes every notebook in notebooks/ from a clean kernel, with one epoch
(MIXPREC_NOTEBOOK_EPOCHS=1), and fails on any error."""

import os

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NOTEBOOKS = sorted(f for f in os.listdir(os.path.join(ROOT, "notebooks")) if f.endswith(".ipynb"))


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 3


@pytest.mark.slow
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs(name, tmp_path, monkeypatch):
    monkeypatch.setenv("MIXPREC_NOTEBOOK_EPOCHS", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(os.path.join(ROOT, "notebooks", name), as_version=4)
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError on the first failing cell
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebooks_use_no_private_names(name):
    """Notebooks teach the public API: no ``tf._core``, ``obj._attr`` or ``_helper()``."""
    import re

    nb = nbformat.read(os.path.join(ROOT, "notebooks", name), as_version=4)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for line in cell.source.splitlines():
            code = line.split("#", 1)[0]
            code = re.sub(r"(['\"]).*?\1", "''", code)  # not inside strings
            assert not re.search(r"\._\w|(?<![\w.])_\w+\(", code), (name, line)
