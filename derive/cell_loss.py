"""What a cell is trained on (squared error or cross-entropy, at which positions, summed or averaged), the
error it feeds back, and the local partial derivatives of one step definition."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import sympy as sp

from seqgrad import validate
from seqgrad.errors import SeqgradTypeError, SeqgradValueError

from . import activations
from .elementwise import Elementwise

LOSS_KINDS = ("squared", "cross_entropy")
REDUCTIONS = ("sum", "mean")
#: the batch size of the text's 1/B (the compiled code supplies it)
B = sp.Symbol("B", integer=True, positive=True)


@dataclass(frozen=True)
class Loss:
    """What the cell is trained on: ``kind`` squared error or softmax cross-entropy over classes,
    ``on`` the final step, ``"every"`` step or a tuple of positions, ``reduction`` sum or mean over
    those positions, ``batch`` sum or mean over the B sequences (the text's 1/B)."""

    kind: str = "squared"
    on: str | tuple = "final"
    reduction: str = "sum"
    batch: str = "sum"

    @classmethod
    def make(cls, kind="squared", on="final", reduction="sum", batch="sum") -> "Loss":
        kind = validate.choice("loss", kind, LOSS_KINDS)
        if isinstance(on, str):
            on = validate.choice("on", on, ("final", "every"))
        else:
            try:
                positions = tuple(sorted({validate.integer("on", p, minimum=0) for p in on}))
            except TypeError:
                raise SeqgradTypeError("on", on, "'final', 'every' or a list of step positions") from None
            if not positions:
                raise SeqgradValueError("on", on, "at least one position")
            on = positions
        return cls(kind, on, validate.choice("reduction", reduction, REDUCTIONS),
                   validate.choice("batch", batch, REDUCTIONS))

    def positions(self, steps: int) -> list[int]:
        if self.on == "final":
            return [steps - 1]
        if self.on == "every":
            return list(range(steps))
        if max(self.on) >= steps:
            raise SeqgradValueError("steps", steps, f"more than the largest loss position {max(self.on)}")
        return list(self.on)

    def scale(self, count) -> sp.Expr:
        """The factor on each position's loss: 1/|positions| for a mean, 1/B for a batch mean."""
        s = sp.Integer(1)
        if self.reduction == "mean":
            s = s / count
        if self.batch == "mean":
            s = s / B
        return s


def _kink_convention(expr, prime):
    """ReLU (``Max(0, z)``) gets slope 0 at 0 as torch.relu; other Heavisides keep SymPy's 1/2 (a tie of
    ``max(a, b)`` splits the gradient evenly, as torch.maximum does)."""
    if isinstance(expr, sp.Max) and len(expr.args) == 2 and 0 in expr.args:
        return prime.replace(lambda e: isinstance(e, sp.Heaviside),
                             lambda e: sp.Heaviside(e.args[0], activations.RELU_PRIME_AT_ZERO))
    return prime


class CrossEntropy(sp.Expr):
    """Softmax cross-entropy of logits ``yhat`` against a target distribution ``y`` (one-hot or soft):
    ``-sum_c y_c log softmax(yhat)_c``; its gradient in ``yhat`` is ``softmax(yhat) - y`` when ``y`` sums to one."""

    is_commutative = True

    def _latex(self, printer):
        return r"\operatorname{CE}\left(%s, %s\right)" % (printer._print(self.args[0]), printer._print(self.args[1]))

    def _sympystr(self, printer):
        return "CE(%s, %s)" % (printer._print(self.args[0]), printer._print(self.args[1]))


def error_value(cell: Cell, yhat, y):
    """``e = yhat - y`` (squared error) or ``e = softmax(yhat) - y`` (cross-entropy)."""
    from .rules import RowSoftmax

    if cell.loss.kind == "squared":
        return yhat - y
    return RowSoftmax(yhat) - y


@lru_cache(maxsize=1024)
def _local_partials(value) -> dict:
    """d value / d each local name of a scalar step definition, through the output where the text writes it so
    (a ``Dummy`` named ``out`` stands for the output).  A function of the value alone, so computed once per
    process: every step of an unrolled program, and every cell with that equation, asks for the same ones and
    renames them to its step.  The dict is shared: read it, never change it."""
    target = sp.Dummy("out")
    out = {}
    for s in sorted(value.free_symbols, key=sp.default_sort_key):
        p = _kink_convention(value, sp.diff(value, s))
        if value.is_Function or isinstance(value, (sp.Max, sp.Min)):
            p = p.xreplace({value: target})
        out[s] = p
    return out


def _partials(cell: Cell, local_value, value_t, target, mapping):
    """Local partials of one step definition: the scalar cell's derivatives (written through the output
    where the text does), or the vector cell's entrywise slope of ``phi(z)``; None: structural rules."""
    if not cell.vector:
        raw = _local_partials(local_value)
        out = {}
        for s, p in raw.items():
            actual = mapping.get(s, s)
            p = p.xreplace({k: v for k, v in mapping.items()})
            p = p.xreplace({d: target for d in p.atoms(sp.Dummy) if d.name == "out"})
            out[actual] = out.get(actual, 0) + p
        return out
    if isinstance(value_t, Elementwise) and isinstance(value_t.expr, sp.MatrixSymbol):
        rule, arg = cell.slope(value_t, target)
        if rule.expr == 1:
            return None
        return {value_t.expr: Elementwise(rule, arg)}
    return None
