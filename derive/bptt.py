r"""Backpropagation through time unrolled: the adjoint of a state as a sum over paths, each a product of Jacobians.

A cell's general-t derivation (:meth:`derive.cell.Cell.general`) gives the backward *recursion*,
``g_t^h = e_t W_o + g_{t+1}^z W_h`` and ``g_t^z = g_t^h (1 - h_t^2)``; this module unrolls it for a cell with one
state and a loss at every step.  One step of the recursion is ``g_t^h = (direct term at t) + g_{t+1}^h J_{t+1}``
with ``J_{t+1}`` the cell's transition Jacobian (:meth:`GeneralDerivation.transition`), so, by induction from
``t = T - 1`` down, the adjoint at an earlier step ``tau`` collects the direct term of every later step ``t``
carried back by the ordered product ``dh_t/dh_tau = J_t J_{t-1} ... J_{tau+1}`` (the empty product, ``t = tau``,
is the identity).  A weight's gradient, a sum over ``tau`` of its local terms, then becomes the textbook's sum over
``t`` and ``tau``:

>>> from seqgrad.derive import builtin_cells, bptt
>>> gd = builtin_cells.rnn_cell(sizes={"D": 2, "H": 3, "C": 1}, bias=True, on="every").general()
>>> u = bptt.Unrolled(gd)
>>> print(u.adjoint_row()[1])
Sum(e_t*W_o*dh_t/dh_{tau}, (t, tau, T - 1))
>>> print(u.gradient("w_h"))
Sum_{t=0}^{T-1} Sum((HadamardProduct(e_t*W_o*dh_t/dh_{tau}, (1 - h_{tau}**2))).T*h_{tau-1}, (tau, 0, t))
>>> u.one_step_holds()
True

Every expression is made from the derivation's own rows (its gradient terms, its adjoint rows, its direct loss
terms and its transition), never typed: a change of the cell reaches it.
"""

from __future__ import annotations

import sympy as sp
from sympy.matrices.expressions.matexpr import MatrixExpr

from seqgrad.errors import SeqgradValueError

from .latex_settings import OrderedProduct, Partial, derivative_tex
from .sequence import Sensitivity, SensitivityMatrix, adjoint, stepped
from .step_sum import T, _make_sum, t

__all__ = ["Unrolled", "PathJacobian", "tau"]

#: the earlier step of a path back in time (t is the later one)
tau = sp.Symbol("tau", integer=True, nonnegative=True)
_j = sp.Symbol("j", integer=True)


def at_step(gd, expr, index):
    """``expr`` of the derivation ``gd`` with its step ``t`` replaced by ``index`` (``tau``, ``t + 1``): the step
    values are nodes (:mod:`derive.sequence`), so instantiation is substitution."""
    return expr.subs(t, index)


def _adjoint(gd, state):
    """The adjoint ``g_t`` of ``state`` at the step t."""
    return adjoint(gd.at_t[state])


def _is_adjoint_at_t(gd, symbol) -> bool:
    """Whether ``symbol`` is an adjoint (``g_t^z``) at the step t."""
    return isinstance(symbol, (Sensitivity, SensitivityMatrix)) and getattr(symbol, "index", None) == t


def _sum(term, limits):
    """``Sum(term, limits)`` as written: SymPy's constructor folds its term again, which moves a transpose of a
    product inside it (``(A B)^T`` -> ``B^T A^T``); the notes print the term as the derivation made it."""
    out = sp.Expr.__new__(sp.Sum, term, sp.Tuple(*limits))
    out.is_commutative = term.is_commutative  # as Sum's constructor sets it
    return out


class PathJacobian(MatrixExpr):
    """The Jacobian ``dh_t/dh_tau`` of a later state by an earlier one, as a matrix label: printed
    ``\\frac{\\partial h_t}{\\partial h_\\tau}``, of shape (entries of ``of``) x (entries of ``wrt``)."""

    def __new__(cls, of, wrt):
        return MatrixExpr.__new__(cls, of, wrt)

    of = property(lambda self: self.args[0])
    wrt = property(lambda self: self.args[1])

    @property
    def shape(self):
        return (self.of.shape[1], self.wrt.shape[1])

    def _latex(self, printer):
        return derivative_tex(printer, printer._print(self.of), printer._print(self.wrt))

    def _sympystr(self, printer):
        return f"d{printer._print(self.of)}/d{printer._print(self.wrt)}"


class Unrolled:
    """The unrolled BPTT of a general-t derivation ``gd`` (one state, a loss at every step)."""

    def __init__(self, gd):
        cell = gd.cell
        if len(cell.states) != 1:
            raise SeqgradValueError("gd", cell.name, "the derivation of a cell with one state (RNN); a gated cell's "
                                    "adjoints couple its states")
        if cell.loss.on != "every":
            raise SeqgradValueError("gd", cell.loss.on, "the derivation of a cell with a loss at every step (on='every')")
        self.gd = gd
        self.state = cell.states[0]
        self.h_t = gd.at_t[self.state]
        self.h_tau = at_step(gd, self.h_t, tau)
        self.adj_t = _adjoint(gd, self.state)
        self.adj_tau = at_step(gd, self.adj_t, tau)
        self.direct = gd.direct[self.state] if gd.scale == 1 else gd.scale * gd.direct[self.state]  # e_t W_o
        # dh_t/dh_tau
        self.path = PathJacobian(self.h_t, self.h_tau) if cell.vector else Partial(self.h_tau, of=self.h_t)

    # -- the rows ------------------------------------------------------------------------
    def product_row(self):
        """``dh_t/dh_tau = J_t J_{t-1} ... J_{tau+1}``, and ``J_t`` from the derivation's transition."""
        return [(self.path, OrderedProduct(self.jacobian(_j), _j, tau + 1, t)),
                (self.jacobian(t), self.gd.transition(self.state))]

    def jacobian(self, index):
        """The transition Jacobian ``J_index`` of the step ``index`` as a value at that step (a node of
        :mod:`derive.sequence`): a matrix, printed bold as the state is, for a vector cell; a number for a scalar one."""
        n = self.h_t.shape[1] if isinstance(self.h_t, MatrixExpr) else None
        return stepped("J", index, (n, n) if n else None)

    def adjoint_row(self):
        """``g_tau^h = sum_{t=tau}^{T-1} (direct term at t) dh_t/dh_tau``."""
        return (self.adj_tau, _sum(self._carried(), (t, tau, T - 1)))

    def _carried(self):
        if not self.gd.cell.vector:
            return sp.Mul(self.direct, self.path)
        return sp.MatMul(*sp.MatMul.make_args(self.direct), self.path)  # e_t W_o dh_t/dh_tau, one product

    def gradient(self, name: str):
        """dL/d``name`` of a step parameter as the double sum over ``t`` and ``tau <= t``: the derivation's gradient
        term at ``tau``, its adjoints written by the derivation's rows in terms of ``g_tau^h``, and ``g_tau^h``'s
        share from step ``t`` (:meth:`adjoint_row`)."""
        stepped = [p for p in self.gd.params if self.gd.step_grads[p] is not None]
        if name not in stepped:
            raise SeqgradValueError("name", name, "a parameter used at every step (a sum over t): "
                                    + ", ".join(stepped))
        term = self.gd.gradient(name).term
        term = at_step(self.gd, term, tau)
        for row in self._adjoint_definitions():  # g_tau^z -> g_tau^h (1 - h_tau^2), ...
            term = term.xreplace({row[0]: row[1]})
        inner = _sum(term.xreplace({self.adj_tau: self._carried()}), (tau, 0, t))
        return _make_sum(inner, 0, T - 1, self.gd)  # the outer sum printed as its own sum over t

    def _adjoint_definitions(self):
        """The derivation's backward rows of the step's own adjoints (``g_t^z``), at step ``tau``."""
        return [(at_step(self.gd, r.lhs, tau), at_step(self.gd, r.rhs, tau)) for r in reversed(self.gd.backward_rows())
                if r.where is None and r.lhs != self.adj_t and _is_adjoint_at_t(self.gd, r.lhs)]

    def rows(self, names=("w_h",)) -> list[tuple]:
        """The display: the product, the adjoint, and the gradients of ``names``."""
        return self.product_row() + [self.adjoint_row()] + [(Partial(self.gd.params[n]), self.gradient(n)) for n in names]

    # -- the proof of the step the induction takes ----------------------------------------
    def one_step_holds(self) -> bool:
        """Whether the derivation's recursion is ``g_t^h = direct_t + g_{t+1}^h J_{t+1}`` entry by entry (at the
        cell's sizes): the induction step from which :meth:`adjoint_row` follows."""
        gd = self.gd
        rows = {r.lhs: r.rhs for r in gd.backward_rows() if r.where is None}
        recursion = rows[self.adj_t]
        later = {at_step(gd, lhs, t + 1): at_step(gd, rhs, t + 1) for lhs, rhs in rows.items() if lhs != self.adj_t}
        lhs = recursion.xreplace(later)
        J = at_step(gd, gd.transition(self.state), t + 1)
        adj_next = at_step(gd, self.adj_t, t + 1)
        rhs = self.direct + adj_next * J
        if gd.cell.vector:
            return sp.simplify(sp.Matrix(lhs.as_explicit()) - sp.Matrix(rhs.as_explicit())) == sp.zeros(*lhs.shape)
        return sp.simplify(lhs - rhs) == 0

