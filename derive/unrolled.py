"""What every unrolled recurrent derivation offers its reader (plain RNN, GRU, LSTM).

A subclass builds ``self.program`` (a :class:`derive.program.Program`), and sets
``self.parameters`` (name -> symbol), ``self.x`` (the input symbols),
``self.gradients`` (symbol -> dL/dsymbol as a sum over uses) and
``self.vector``.  This base class then prints the derivation, exports LaTeX and
DOT, and answers ``grad(name)`` in the recurrence form or, on request, as a
size-guarded closed form.
"""

from __future__ import annotations

import sympy as sp

from seqgrad.errors import SeqgradValueError

from .latex_settings import Partial, notebook_notation
from .program import latex_aligned


class Unrolled:
    program: object
    parameters: dict
    x: list
    gradients: dict
    vector: bool

    def __str__(self) -> str:
        return str(self.program)

    def latex(self, kinds=None, notation=None) -> str:
        """The whole derivation (forward, loss, backward, gradients) as a display, under ``notation``."""
        rows = [(d.target, d.value) for d in self.program.definitions(kinds)]
        if kinds is None:
            rows += [(Partial(s), self._gradient(s)) for s in self.parameters.values()]
        return latex_aligned(rows, notation=notation)

    def _repr_latex_(self) -> str:
        return self.latex(notation=notebook_notation())  # already a complete display (align*), which Jupyter renders as it is

    def dot(self) -> str:
        """The unrolled graph and its backward pass as Graphviz DOT text."""
        return self.program.dot()

    def _gradient(self, symbol):
        """dL/d``symbol`` as a sum over uses (zero for a parameter the loss does not reach)."""
        zero = sp.ZeroMatrix(*symbol.shape) if isinstance(symbol, sp.MatrixSymbol) else sp.Integer(0)
        return self.gradients.get(symbol, zero)

    def grad(self, name: str, expand: bool | str = False, max_terms: int | None = None):
        """dL/d``name`` for a parameter (``w_x, w_h, w_o``; vector ``W_x``...; gate weights such as
        ``W_xr``, ``b_hn``) or an input ``x_t``: the sum over its uses, in terms of the sensitivities.

        ``expand=True`` substitutes the backward recursion (the text's closed
        forms); ``expand="all"`` substitutes everything down to parameters and
        data.  Both are guarded by ``max_terms`` (default :data:`derive.program.MAX_TERMS`).
        """
        allowed = list(self.parameters) + [str(x) for x in self.x]
        if not isinstance(name, str) or name not in allowed:
            raise SeqgradValueError("name", name, "one of " + ", ".join(allowed))
        symbol = self.parameters.get(name) or self.x[int(name[2:])]
        return self._closed(self._gradient(symbol), expand, max_terms, f"dL/d{name}")

    def _closed(self, expr, expand, max_terms, what):
        if expand is False:
            return expr
        if expand is True:
            out = self.program.expand(expr, kinds=("backward",), max_terms=max_terms, what=what)
            return sp.factor_terms(out) if (not self.vector and out.is_Add) else out
        if expand == "all":
            return self.program.expand(expr, kinds=None, max_terms=max_terms, what=what)
        raise SeqgradValueError("expand", expand, "False, True or 'all'")
