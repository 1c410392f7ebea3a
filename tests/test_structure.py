"""Structure left from the first round (issue 18): every ``derive.X`` in ``__all__`` is reachable and
every module is listed; nothing outside the CLI imports a command module's private names; no file
cites a file that does not exist."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_derive_all_lists_every_module_and_each_is_reachable():
    code = ("import sys, seqgrad.derive as derive; "
            "[getattr(derive, n) for n in derive.__all__]; "
            "print(' '.join(derive.__all__)); print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, check=True).stdout.split("\n")
    names = out[0].split()
    modules = sorted(p.stem for p in (ROOT / "derive").glob("*.py") if not p.stem.startswith("_"))
    assert names == sorted(modules + ["verify", "diff"])  # every module, and the two functions derive.verify, derive.diff
    assert out[1] == "False", "import derive (and its submodules) must not import torch"


def test_derive_unknown_attribute_is_an_attribute_error():
    from seqgrad import derive
    with pytest.raises(AttributeError):
        derive.nosuchmodule  # noqa: B018


def _imports(path: Path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            yield node.module or "", [a.name for a in node.names], node.level


def test_no_module_imports_a_command_modules_private_names():
    found = []
    for path in sorted((ROOT / "crosscheck").rglob("*.py")):
        if "commands" in path.parts:
            continue
        for module, names, _ in _imports(path):
            if "commands" in module.split("."):
                found += [f"{path.relative_to(ROOT)}: {module}.{n}" for n in names if n.startswith("_")]
    assert not found, found


def test_benchdoc_lives_with_the_benchmarks():
    assert (ROOT / "benchmarks" / "benchdoc.py").is_file()
    assert not (ROOT / "seqgrad" / "benchdoc.py").exists()
    for script in (ROOT / "benchmarks").glob("*.py"):
        assert "seqgrad.benchdoc" not in script.read_text() and "from seqgrad import benchdoc" not in script.read_text()


CITED = re.compile(r"\b((?:tests|docs|benchmarks|derive|numeric|crosscheck|seqgrad)/[\w/.-]+\.(?:py|md|json))\b|\b(DESIGN\.md)\b")


@pytest.mark.parametrize("folder", ["derive", "numeric", "crosscheck", "seqgrad", "benchmarks", ".ci"])
def test_no_comment_cites_a_missing_file(folder):
    missing = []
    for path in sorted((ROOT / folder).rglob("*")):
        if not path.is_file() or path.suffix not in (".py", "", ".sh"):
            continue
        for match in CITED.finditer(path.read_text(encoding="utf-8", errors="replace")):
            cited = match.group(1) or match.group(2)
            if "NAME" not in cited and not (ROOT / cited).exists():  # NAME: a placeholder (benchmarks/NAME.py)
                missing.append(f"{path.relative_to(ROOT)} cites {cited}")
    assert not missing, missing


# ----------------------------------------------------------------------------- checks declare their needs


def test_no_check_module_repeats_the_device_preamble():
    """A check declares ``needs_torch=True`` and the registry supplies ``ctx.dev``/``ctx.dt`` (or the
    skip); the "torch device or skip" lines once copied into 16 checks are gone."""
    for path in sorted((ROOT / "crosscheck" / "checks").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert "torch_device()" not in text and 'skip("no CUDA GPU")' not in text, path.name


def test_registry_supplies_device_and_dtype_or_skips(monkeypatch):
    import torch

    from seqgrad.crosscheck import registry
    from seqgrad.crosscheck.tolerance import Outcome

    seen = []

    def probe(ctx):
        seen.append((ctx.dev, ctx.dt))
        return Outcome.exact(True, "probe")

    item = registry.Check("test.probe", "test", "test", probe, "", needs_torch=True)
    assert registry.run_one(item, "cpu", "float32").status == "pass"
    assert seen == [(torch.device("cpu"), torch.float32)]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    result = registry.run_one(item, "cuda", "float64")
    assert result.status == "skip" and "no CUDA GPU" in result.detail and len(seen) == 1  # never called
    plain = registry.Check("test.plain", "test", "test", probe, "")
    assert registry.run_one(plain, "cpu").status == "pass" and seen[-1] == (None, None)


TORCH_ON_THE_RUN_DEVICE = ["encoder.course_tables", "encoder.causal_journey_row", "encoder.course_heads_not_in_torch",
                           "rnn.scalar.autograd", "rnn.vector.autograd", "rnn.vector.per_position", "rnn.manual_bptt",
                           "rnn.seeded_example", "rnn.path_products"]


def test_checks_that_compute_on_the_run_device_declare_it(monkeypatch):
    """These checks computed with torch on the run's device without declaring it: asked for CUDA on a machine
    without one, they ended in errors (one a raw AssertionError) instead of the skip."""
    import torch

    from seqgrad.crosscheck import registry

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    items = {c.name: c for c in registry.all_checks()}
    for name in TORCH_ON_THE_RUN_DEVICE:
        assert items[name].needs_torch, name
        assert registry.run_one(items[name], "cuda", "float32").status == "skip", name


@pytest.mark.slow
def test_no_check_errs_for_a_missing_gpu(monkeypatch):
    """Every check either declares ``needs_torch`` (and is skipped) or does not compute on the run's device."""
    import torch

    from seqgrad.crosscheck import registry

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    items = [c for c in registry.all_checks() if c.group not in ("identities", "claims")]  # derive-only, no torch
    errors = [(r.name, r.detail) for r in (registry.run_one(c, "cuda", "float64") for c in items) if r.status == "error"]
    assert not errors, errors


# ----------------------------------------------------------------------------- import circles in derive/


def _package_imports(package: str, module: str, *, inside_functions: bool) -> set[str]:
    """The modules of ``package`` (derive, crosscheck; a dotted module for a subfolder) that
    ``<package>/<module>.py`` imports, at module level or anywhere."""
    folder = ROOT / package
    modules = {p.relative_to(folder).with_suffix("").as_posix().replace("/", ".") for p in folder.rglob("*.py")}
    path = folder / (module.replace(".", "/") + ".py")
    here = module.split(".")[:-1]  # the subpackage a relative import starts from
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in (ast.walk(tree) if inside_functions else tree.body):
        if isinstance(node, ast.ImportFrom):
            target = node.module or ""
            if node.level:
                base = here[: len(here) - (node.level - 1)] if node.level > 1 else here
                stem = ".".join(base + ([target] if target else []))
                found |= {f"{stem}.{a.name}".lstrip(".") for a in node.names} | {stem}
            elif target.startswith(f"seqgrad.{package}"):
                stem = target[len(f"seqgrad.{package}"):].lstrip(".")
                found |= {f"{stem}.{a.name}".lstrip(".") for a in node.names} | {stem}
        elif isinstance(node, ast.Import):
            found |= {a.name[len(f"seqgrad.{package}."):] for a in node.names if a.name.startswith(f"seqgrad.{package}.")}
    return found & modules


def _derive_imports(module: str, *, inside_functions: bool) -> set[str]:
    return _package_imports("derive", module, inside_functions=inside_functions)


def _reachable(start: str, inside_functions: bool, package: str = "derive") -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for dep in _package_imports(package, todo.pop(), inside_functions=inside_functions) - seen:
            seen.add(dep)
            todo.append(dep)
    return seen


@pytest.mark.parametrize("inside_functions", [False, True], ids=["module-level", "inside-functions-too"])
def test_derive_has_no_import_circle(inside_functions):
    """No derive module reaches itself through its imports, not even through an import inside a function
    (the rule table once imported ``Elementwise`` and ``sstr`` from the program module that imports it:
    they now live in derive/elementwise.py and derive/program_text.py, below both)."""
    circles = [m for m in sorted(p.stem for p in (ROOT / "derive").glob("*.py")) if m in _reachable(m, inside_functions)]
    assert not circles, circles


@pytest.mark.parametrize("module", ["catalogue", "identity", "proof"])
def test_the_catalogue_and_the_identity_base_classes_are_in_no_import_circle(module):
    """The registry imports the modules that define entries, and they import the base classes
    (derive/identity.py, derive/proof.py), never the registry: no circle, not even through an import
    inside a function (once the base classes shared derive/catalogue.py and 12 modules formed one circle)."""
    assert module not in _reachable(module, True)
    if module != "catalogue":
        users = [p.stem for p in (ROOT / "derive").glob("*.py") if p.stem != "catalogue"]
        assert not [u for u in users if "catalogue" in _derive_imports(u, inside_functions=True)]


def test_rnn_function_lives_with_the_cell_engine_and_is_imported_from_there():
    from seqgrad.crosscheck import cells, lambdify

    assert not hasattr(lambdify, "RNNFunction")  # one home, no second spelling kept for compatibility
    users = [p for p in list(ROOT.glob("[cbt]*/**/*.py")) + list((ROOT / "docs").rglob("*.md"))
             if "lambdify import RNNFunction" in p.read_text(encoding="utf-8") and p.name != "test_structure.py"]
    assert not users, users
    assert cells.RNNFunction.__module__ == "seqgrad.crosscheck.cells"


def test_the_printer_pieces_are_imported_from_code_printer_not_through_lambdify():
    """crosscheck/lambdify.py once re-exported code_printer's pieces (``# noqa: F401``); matcalc looked one up
    there with getattr and a None default, so losing it would have silently left the registry's operations out of
    ``seqgrad diff``'s namespace.  One home: every importer names code_printer."""
    from seqgrad.crosscheck import lambdify

    for name in ("_Code", "_Printer", "_TorchPrinter", "operation_backend", "operation_namespace"):
        assert not hasattr(lambdify, name), name
    users = [p for p in list(ROOT.glob("[cbt]*/**/*.py"))
             if re.search(r"lambdify import[^\n]*\b(_Printer|_TorchPrinter|_Code|identifier|operation_namespace|operation_backend)\b",
                          p.read_text(encoding="utf-8")) and p.name != "test_structure.py"]
    assert not users, users


def test_one_generator_prints_the_cell_loops():
    """The gate loop is the IR rewritten by the fusion pass (cell_loop.fuse_gates) and printed by loop_ir's
    Emitter: the generator that printed it beside the IR (cell_loop.gated_source) and the buffered module's
    own Emitter are gone, no parallel path kept."""
    from seqgrad.crosscheck import buffered, cell_loop, loop_ir

    assert not hasattr(cell_loop, "gated_source") and not hasattr(buffered, "Emitter")
    assert not hasattr(loop_ir.Emitter, "statements")  # no door for another generator to print IR pieces through


def test_crosscheck_has_no_import_circle():
    """No crosscheck module reaches itself through its imports, not even inside a function: the document's pieces
    (text, figures, marks, the build's settings) live in crosscheck/latex_parts.py, below the assembly
    (latexdoc), the sections (notes, latex_decoder_conv), the section runner (latexrun) and the report,
    which once formed one circle of five modules."""
    folder = ROOT / "crosscheck"
    modules = sorted(p.relative_to(folder).with_suffix("").as_posix().replace("/", ".") for p in folder.rglob("*.py"))
    circles = [m for m in modules if m in _reachable(m, True, package="crosscheck")]
    assert not circles, circles


@pytest.mark.parametrize("module", ["cells", "cell_loop", "cell_source", "buffered", "lambdify"])
def test_the_compiled_loop_modules_are_in_no_import_circle(module):
    """The cell engine's compilers import downwards only (cells -> cell_loop -> loop_ir -> buffered, cell_source ->
    lambdify), even through imports inside functions: the pieces both loop layouts share live in
    crosscheck/cell_source.py (once cell_loop imported them from cells, which imports cell_loop)."""
    assert module not in _reachable(module, True, package="crosscheck")


def test_the_base_classes_are_importable_from_the_catalogue_as_before():
    from seqgrad.derive import catalogue, identity, proof

    for name in ("Derivation", "Identity", "NumericResult", "METHODS", "RULES", "numeric_sides", "evaluate"):
        assert getattr(catalogue, name) is getattr(identity, name)
    for name in ("Proof", "proof_by", "rational_zero", "angle_addition", "pythagorean", "reduce_all"):
        assert getattr(catalogue, name) is getattr(proof, name)


# ----------------------------------------------------------------------------- functions by reference


def _name_lookups(path: Path) -> list[str]:
    """``getattr(module, name)`` calls in ``path`` whose module is an imported module (other than ``sys``,
    whose streams the CLI reaches by name) and whose name is not a literal: a function looked up by a
    string instead of referenced."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            modules |= {a.asname or a.name for a in node.names}
    return [f"{path.relative_to(ROOT)}:{node.lineno}" for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
            and isinstance(node.args[0], ast.Name) and node.args[0].id in modules - {"sys"}
            and not isinstance(node.args[1], ast.Constant)]


def test_figure_and_provider_functions_are_referenced_not_looked_up_by_name():
    """Figure sets name their plotting functions (crosscheck/figures/paths.py once held a table of function
    names for getattr), and the claims' providers are functions, not names."""
    files = sorted((ROOT / "crosscheck").rglob("*.py")) + sorted((ROOT / "numeric").glob("figures*.py"))
    found = [hit for path in files for hit in _name_lookups(path)]
    assert not found, found
    from seqgrad.crosscheck.figures import paths

    assert all(callable(plot) and plot.__module__ == "seqgrad.numeric.figures_paths" for plot, _ in paths.figures().values())
