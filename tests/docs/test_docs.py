"""Every Python block in docs/*.md and README.md runs, and every mixprec name in the
porting table exists."""

import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = sorted([os.path.join(ROOT, "docs", f) for f in os.listdir(os.path.join(ROOT, "docs"))
               if f.endswith(".md")] + [os.path.join(ROOT, "README.md")])
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def _blocks():
    for path in DOCS:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for i, m in enumerate(BLOCK.finditer(text)):
            yield pytest.param(path, m.group(1), id="%s-%d" % (os.path.basename(path), i))


@pytest.mark.parametrize("path,code", list(_blocks()))
def test_doc_block_runs(path, code, tmp_path):
    script = tmp_path / "block.py"
    # exactly as a reader would copy it: nothing is prepended (a block that uses np must
    # import numpy itself)
    script.write_text(code)
    cmd = [sys.executable, str(script)]
    if re.search(r"^def test_", code, re.M):
        # a block that is a test module runs the way its reader runs it: under pytest, with
        # mixprec's plugin found through its entry point
        script = tmp_path / "test_block.py"
        script.write_text(code)
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(script)]
    # a fresh interpreter per block: blocks may set global policies or seeds
    r = subprocess.run(cmd, cwd=str(tmp_path), capture_output=True, text=True, timeout=300)
    if r.returncode != 0 and "requires h5py, which is not installed" in r.stderr:
        pytest.skip("h5py is not installed (an optional extra: pip install 'mixprec[h5]')")
    assert r.returncode == 0, "%s block failed:\n%s\n%s%s" % (path, code, r.stdout[-3000:],
                                                          r.stderr[-3000:])


def _porting_names():
    with open(os.path.join(ROOT, "docs", "porting.md"), encoding="utf-8") as f:
        for line in f:
            m = re.match(r"\| `[^`]*` \| `(mixprec\.[\w.]+)` \|", line)
            if m:
                yield m.group(1)


def test_porting_table_names_exist():
    import mixprec

    names = list(_porting_names())
    assert len(names) > 150
    missing = []
    for name in names:
        obj = mixprec
        for part in name.split(".")[1:]:
            if not hasattr(obj, part):
                missing.append(name)
                break
            obj = getattr(obj, part)
    assert not missing, "porting.md lists names mixprec does not have: %s" % missing
