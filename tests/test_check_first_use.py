"""seqgrad check imports, once in its own process before it forks, the modules that its workers would each import
on first use (crosscheck.commands.check.FIRST_USE*): a worker then shares the parent's copy instead of importing
its own (SymPy's units alone cost 0.09 s of CPU in each worker that calls simplify)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from seqgrad.crosscheck import parallel
from seqgrad.crosscheck.commands import check

needs_fork = pytest.mark.skipif(not parallel.can_fork(), reason="the parallel runner needs fork (Linux)")

# In a fresh process (nothing imported by other tests): record which of the first-use modules are imported at each
# fork of a run of seqgrad check, then run it on two fast identity checks with two jobs.
_RECORD = """
import json, sys
from seqgrad.crosscheck import parallel
from seqgrad.crosscheck.commands import check
from seqgrad.crosscheck.cli import main
names = check.FIRST_USE_SYMPY + check.FIRST_USE
seen = []
fork = parallel._fork
def recording(tasks, registry):
    seen.append({"head": isinstance(registry, parallel.HeadStart), "imported": [n for n in names if n in sys.modules]})
    return fork(tasks, registry)
parallel._fork = recording
status = main(["check", "--only", "identity:pe-norm*", "--only", "experiment", "--jobs", "2", "--out", sys.argv[1]])
print(json.dumps({"status": status, "seen": seen}))
"""


def _python(code: str, *args: str) -> str:
    """``code`` run by this Python in a fresh process; its standard output (it must exit 0)."""
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


@needs_fork
def test_the_first_use_modules_are_imported_before_the_workers_are_forked(tmp_path):
    record = json.loads(_python(_RECORD, str(tmp_path / "report")).strip().splitlines()[-1])
    assert record["status"] == 0
    head = [f for f in record["seen"] if f["head"]]
    full = [f for f in record["seen"] if not f["head"]]
    assert len(head) == 1 and full, record["seen"]
    assert set(check.FIRST_USE_SYMPY) <= set(head[0]["imported"])  # before the head start's fork
    for fork in full:
        assert set(check.FIRST_USE_SYMPY + check.FIRST_USE) <= set(fork["imported"])


def test_import_first_use_loads_pils_plugins_as_a_png_save_would():
    out = _python("import json, sys\nfrom seqgrad.crosscheck.commands import check\n"
                  "check.import_first_use(check.FIRST_USE_FIGURES)\nimport PIL.Image\n"
                  "print(json.dumps([PIL.Image._initialized, [m for m in sys.modules if m.startswith(('PIL.', 'matplotlib.'))]]))")
    initialized, modules = json.loads(out.strip().splitlines()[-1])
    assert initialized >= 1 and {"PIL.PngImagePlugin", "matplotlib.backends.backend_agg"} <= set(modules)


def test_the_first_use_modules_exist():
    import importlib.util

    for name in check.FIRST_USE_SYMPY + check.FIRST_USE + check.FIRST_USE_FIGURES:
        assert importlib.util.find_spec(name) is not None, name


def test_a_module_this_installation_lacks_is_left_to_the_task():
    """Only a saving of time: a missing module is passed over, without an error, and the names after it still load."""
    sys.modules.pop("wave", None)
    check.import_first_use(("seqgrad_no_such_module_here", "wave"))
    assert "wave" in sys.modules and "seqgrad_no_such_module_here" not in sys.modules
