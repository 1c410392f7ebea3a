"""The PE shift with R(k), the residual and block Jacobians and catalogue statements export LaTeX that compiles."""

import shutil
import subprocess

import pytest

from seqgrad.derive import catalogue, positional, residual, softmax, layernorm

pytestmark = [pytest.mark.tex, pytest.mark.skipif(shutil.which("pdflatex") is None,
                                                  reason="no pdflatex here: install texlive-latex-base texlive-latex-recommended")]


def compile_ok(tmp_path, name: str, text: str) -> None:
    tex = tmp_path / f"{name}.tex"
    tex.write_text(text, encoding="utf-8")
    proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", tex.name], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and (tmp_path / f"{name}.pdf").exists(), proc.stdout[-3000:]


def test_derivations_compile(tmp_path):
    objects = {
        "shift5": positional.Sinusoidal(5).shift_identity(),
        "rotation": positional.Sinusoidal(6, layout="half").rotation(positional.k),
        "noscalar": positional.NoScalarShift(positional.Sinusoidal(5)),
        "softmax": softmax.SoftmaxJacobian(3),
        "layernorm": layernorm.LayerNorm(4),
        "plain": residual.ResidualJacobian(2, "plain"),
        "postnorm": residual.ResidualJacobian(2, "post-norm"),
        "block": residual.EncoderBlock(1, 2),
        "depth": residual.DepthProduct(3, 2, scale=2),
    }
    body = "\n".join(obj.latex() for obj in objects.values())  # complete displays: pasted as they are
    compile_ok(tmp_path, "all", "\\documentclass{article}\n\\usepackage{amsmath,amssymb}\n\\begin{document}\n" + body + "\n\\end{document}\n")
    compile_ok(tmp_path, "one", objects["shift5"].document())


def test_small_catalogue_statements_compile(tmp_path):
    entries = [e for e in catalogue.entries() if e.name.startswith(("softmax", "pe-shift-d5", "count", "layernorm-mean"))]
    body = "\n".join(e.latex() for e in entries)
    compile_ok(tmp_path, "entries", "\\documentclass{article}\n\\usepackage{amsmath,amssymb}\n\\begin{document}\n" + body + "\n\\end{document}\n")
