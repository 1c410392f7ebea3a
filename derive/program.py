r"""Derivations as straight-line programs over named intermediates.

This is the answer to expression swell: SymPy walks a nested unrolled graph as a
tree, so differentiating a fully nested tanh RNN costs time exponential in the
number of steps (plain ``sympy.diff`` on a scalar tanh RNN reaches
RecursionError at 80 steps).  A derivation is a :class:`Program`: an ordered list of
:class:`Definition` ``target := value`` where every target is a named SymPy
``Symbol`` (scalar cells) or ``MatrixSymbol`` (vector cells) such as ``z_t``,
``h_t``, ``g_t^h``, ``g_t^z``, and every value refers only to inputs
(parameters, data) and to earlier targets.  A program of T steps therefore has
size O(T), prints as the textbook's recursion, lambdifies with every common
subexpression shared (:mod:`crosscheck.lambdify`), and expands into a closed
form only on request, behind a size guard.

API (for cells built on top of this module: RNN, GRU, LSTM, ...)
----------------------------------------------------------------

``Program(name)``
    An empty program.
``prog.define(target, value, kind="forward", step=None, partials=None)``
    Append ``target := value`` and return ``target``.  ``kind`` is free text;
    the conventions are ``"forward"``, ``"loss"`` and ``"backward"``.
    ``partials`` optionally gives the local derivatives d value / d s
    (scalars) or the entrywise local derivative (matrices, for an
    :class:`Elementwise` value); by default they are found with ``sympy.diff``
    (scalars) or by the structural matrix rules of :func:`pullback`.
``Template(value, variables, output=None, partials=None)``
    A local equation over fresh symbols, **differentiated once** and then
    instantiated at every step: ``value, partials = template.at(mapping)``;
    ``prog.apply(template, target, mapping, ...)`` does both and defines.
``prog.backward(seeds, adjoint_name, emit=None)``
    Reverse-mode chain rule over the program: ``seeds`` maps a target to its
    loss sensitivity; ``adjoint_name(target)`` names the sensitivity of each
    target (``"g_0^z"``) or returns ``None`` to leave it inline.  Appends one
    ``"backward"`` definition per named sensitivity (``adjoint_name`` may give the symbol itself, e.g. a
    :func:`derive.sequence.adjoint` node) and returns the gradients
    of the leaves (symbols that are not defined) as sums over their uses.
``prog.expand(expr, kinds=("backward",), max_terms=MAX_TERMS)``
    Substitute the definitions of the given kinds (``None``: all) into
    ``expr``: a closed form.  Raises :class:`~seqgrad.errors.SizeGuardError`
    when the result would have more than ``max_terms`` expression-tree nodes
    (estimated before anything is built).
``prog.evaluate(expr, values)``
    Evaluate ``expr`` with the leaves replaced by ``values`` (numbers,
    explicit matrices or expressions), one definition at a time; a list of
    expressions (a loss and its gradients) shares the definitions they need.
``prog.latex()``, ``prog._repr_latex_()``, ``str(prog)``, ``prog.dot()``
    An ``aligned`` environment (long sums broken over lines; every piece is
    printed by ``sympy.latex``), Jupyter rendering, the plain recursion, and
    the dependency graph as Graphviz DOT text.

Matrix expressions use SymPy's ``MatMul``, ``MatAdd``, ``Transpose``,
``HadamardProduct``, ``ZeroMatrix``/``OneMatrix``, plus :class:`Elementwise`
(a function applied entrywise) and :class:`SquaredNorm` (sum of squared
entries, for losses).  Vectors are row vectors, so a batch of B sequences is B
rows and every formula applies unchanged.

>>> import sympy as sp
>>> x, w, y = sp.symbols("x w y")
>>> prog = Program("tiny")
>>> u = prog.define(sp.Symbol("u"), w * x)
>>> L = prog.define(sp.Symbol("L"), (u - y) ** 2 / 2, kind="loss")
>>> grads = prog.backward({L: sp.Integer(1)}, lambda s: "g^" + s.name)
>>> grads[w]
g^u*x
>>> print(prog)
u = w*x
L = (u - y)**2/2
g^L = 1
g^u = g^L*(u - y)
>>> prog.expand(grads[w], kinds=None)
x*(w*x - y)
>>> prog.evaluate([L, grads[w]], {w: 2, x: 3, y: 5})
[1/2, 3]
"""

from __future__ import annotations

import functools
import operator
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

import sympy as sp
from sympy.core.basic import _args_sortkey
from sympy.matrices.expressions.matexpr import MatrixExpr

from seqgrad.errors import SeqgradTypeError, SeqgradValueError, SizeGuardError

from .elementwise import Elementwise, SquaredNorm
from .program_text import pretty, sstr
from .safe_parse import as_sympy

__all__ = ["MAX_TERMS", "Program", "Definition", "Template", "pullback", "fast_mul", "fast_add", "fast_matadd"]

#: Default size guard of :meth:`Program.expand`: the largest closed form, in
#: expression-tree nodes counted with repetition, that is built without an
#: explicit ``max_terms``.  (The text's T = 3 closed forms have about 60.)
MAX_TERMS = 20_000


def _latex(expr) -> str:
    """LaTeX in the text's notation (:class:`derive.latex_settings.NotationPrinter`)."""
    from .latex_settings import NotationPrinter

    return NotationPrinter().doprint(expr)


@dataclass(frozen=True)
class Definition:
    """One line ``target := value`` of a program."""

    target: sp.Basic
    value: sp.Basic
    kind: str = "forward"
    step: int | None = None
    partials: Mapping[sp.Basic, sp.Basic] | None = field(default=None, compare=False)

    @property
    def is_matrix(self) -> bool:
        return isinstance(self.target, MatrixExpr)

    def latex(self, notation=None) -> str:
        """This line as a complete display (``align*``, :func:`derive.latex_layout.display`)."""
        from .latex_layout import display

        return display([(self.target, self.value)], notation)

    def __str__(self) -> str:
        return f"{sstr(self.target)} = {sstr(self.value)}"


class Template:
    """A local equation over fresh symbols, differentiated once, used at every step.

    ``variables`` are the placeholders the value depends on; ``output`` is an
    optional placeholder for the defined quantity itself, so that a local
    derivative may be written through it (tanh: ``1 - h**2``).  ``partials``
    overrides ``sympy.diff`` for some variables.

    >>> import sympy as sp
    >>> w, x, h = sp.symbols("w x h")
    >>> cell = Template(w * x + 2 * h, [w, x, h])
    >>> cell.at({w: sp.Symbol("w_x"), x: sp.Symbol("x_3"), h: sp.Symbol("h_2")})[1]
    {w: x_3, x: w_x, h: 2}
    """

    def __init__(self, value, variables: Iterable[sp.Symbol], output: sp.Symbol | None = None,
                 partials: Mapping[sp.Symbol, sp.Basic] | None = None):
        self.value = as_sympy(value, "value")
        self.variables = tuple(variables)
        self.output = output
        given = dict(partials or {})
        self.partials = {v: (given[v] if v in given else sp.diff(self.value, v)) for v in self.variables}

    def at(self, mapping: Mapping[sp.Symbol, sp.Basic], output: sp.Basic | None = None):
        """The value and the partials (keyed by the original placeholders) at ``mapping``."""
        subs = dict(mapping)
        if self.output is not None and output is not None:
            subs[self.output] = output
        return _rebuild(self.value, subs), {v: _rebuild(p, subs) for v, p in self.partials.items()}


def _atomic_factor(f) -> bool:
    """A factor Mul keeps as it is: a symbol, a function value, or a power of a symbol."""
    if f.is_Symbol or f.is_Function:
        return f.is_commutative is True
    return f.is_Pow and f.base.is_Symbol and f.exp.is_Integer and f.exp not in (0, 1) and f.base.is_commutative is True


def fast_mul(*factors):
    """``Mul(*factors)``, built without SymPy's flattening when the result is already canonical.

    Long programs build thousands of products of distinct symbols (``g_t^z*x_t``);
    sorting them with SymPy's own key and skipping ``Mul.flatten`` gives the
    identical (equal, same argument order) expression several times faster.
    Anything else (repeated bases, nested products, several numbers) goes
    through ``Mul`` itself.
    """
    numbers = [f for f in factors if f.is_Number]
    rest = [f for f in factors if not f.is_Number]
    if len(factors) > 1 and len(numbers) <= 1 and not any(n in (0, 1) for n in numbers) and rest:
        adds_ok = not numbers
        if all(_atomic_factor(f) or (adds_ok and f.is_Add and f.is_commutative is True) for f in rest):
            bases = [f.base if f.is_Pow else f for f in rest]
            if len(set(bases)) == len(bases):
                if len(rest) == 1 and not numbers:
                    return rest[0]
                return sp.Mul._from_args(tuple(numbers) + tuple(sorted(rest, key=_args_sortkey)), is_commutative=True)
    return sp.Mul(*factors)


def fast_add(terms):
    """``Add(*terms)`` without ``Add.flatten`` when no two terms combine (distinct monomials, one number at most)."""
    terms = list(terms)
    numbers = [t for t in terms if t.is_Number]
    rest = [t for t in terms if not t.is_Number]
    if len(terms) > 1 and len(numbers) <= 1 and not any(n == 0 for n in numbers) and all(
            (t.is_Mul or _atomic_factor(t)) and t.is_commutative is True for t in rest):
        monomials = [t.as_coeff_Mul()[1] for t in rest]
        if len(set(monomials)) == len(monomials):
            if len(rest) == 1 and not numbers:
                return rest[0]
            return sp.Add._from_args(tuple(numbers) + tuple(sorted(rest, key=_args_sortkey)), is_commutative=True)
    return sp.Add(*terms)


def _rebuild(expr, mapping):
    """``expr.xreplace(mapping)`` through :func:`fast_mul` and :func:`fast_add`."""
    if expr in mapping:
        return mapping[expr]
    if not expr.args or expr.is_Symbol:
        return expr
    args = [_rebuild(a, mapping) for a in expr.args]
    if all(a is b for a, b in zip(args, expr.args)):
        return expr
    if expr.is_Mul:
        return fast_mul(*args)
    if expr.is_Add:
        return fast_add(args)
    if expr.is_Pow and args[0].is_Symbol and args[1].is_Integer and args[1] not in (0, 1):
        return sp.Pow(*args, evaluate=False)  # h**2 of a symbol is already canonical
    if expr.is_Function and all(a.is_Symbol for a in args):
        return expr.func(*args, evaluate=False)  # tanh(z_t) of a plain symbol does not simplify
    return expr.func(*args)


def _sum(terms: list):
    if not terms:
        return sp.Integer(0)
    if isinstance(terms[0], MatrixExpr):
        return fast_matadd(terms)
    return fast_add(terms)


def _matrix_part(term):
    return sp.MatMul(*term.as_coeff_matrices()[1]) if isinstance(term, sp.MatMul) else term


def fast_matadd(terms):
    """A sum of matrix terms in SymPy's canonical order, without re-simplifying every term
    (``MatAdd.doit`` on a growing sum is quadratic in the number of terms)."""
    terms = list(terms)
    if len(terms) == 1:
        return terms[0]
    simple = all(not isinstance(t, (sp.MatAdd, sp.ZeroMatrix)) for t in terms)
    if simple and len({_matrix_part(t) for t in terms}) == len(terms):
        return sp.MatAdd(*sorted(terms, key=sp.default_sort_key))
    return functools.reduce(operator.add, terms)


def pullback(expr, G, output=None) -> list[tuple[sp.Basic, sp.Basic]]:
    """Reverse-mode rule of a matrix expression: pairs (leaf, contribution), by the rule table
    (:mod:`derive.rules`, each rule proved at symbolic size).

    ``G`` is the sensitivity of the loss to ``expr`` (same shape); the result
    lists, for every ``MatrixSymbol`` inside ``expr``, the term its use adds to
    its own sensitivity.  The rules are the text's: ``X W^T`` sends ``G W`` to
    ``X`` and ``G^T X`` to ``W`` (an outer product), a sum passes ``G`` to
    every term, ``phi(Z)`` entrywise sends ``G o phi'(Z)`` to ``Z``.
    ``output`` is the program's name for ``expr`` (rules such as softmax print through it).
    """
    from . import rules

    return rules.pullback(expr, G, output)


def _replace_in_order(expr, mapping):
    """``expr.xreplace(mapping)`` keeping the order of sums and products as the rule wrote them."""
    if expr in mapping:
        return mapping[expr]
    if not expr.args:
        return expr
    args = [_replace_in_order(a, mapping) for a in expr.args]
    if all(a is b for a, b in zip(args, expr.args)):
        return expr
    if isinstance(expr, (sp.MatAdd, sp.HadamardProduct, sp.MatMul)):
        return expr.func(*args, evaluate=False)
    return expr.func(*args)


@dataclass
class _Sizes:
    table: dict
    defs: int

    def __len__(self) -> int:
        return self.defs


def _tree_size(expr, sizes: Mapping) -> int:
    if expr in sizes:
        return sizes[expr]
    if isinstance(expr, (sp.Symbol, sp.MatrixSymbol)) or not expr.args:
        return 1
    return 1 + sum(_tree_size(a, sizes) for a in expr.args)


def _free(expr) -> set:
    return {s for s in expr.free_symbols if isinstance(s, (sp.Symbol, sp.MatrixSymbol))} if isinstance(expr, sp.Basic) else set()


class Program:
    """A straight-line program of named definitions (see the module docstring)."""

    def __init__(self, name: str = ""):
        self.name = name
        self._defs: list[Definition] = []
        self._index: dict[sp.Basic, int] = {}
        self.gradients: dict[sp.Basic, sp.Basic] = {}
        self.adjoints: dict[sp.Basic, sp.Basic] = {}
        self._sizes: dict = {}
        self._names: dict[str, sp.Basic] = {}
        self._named_rows: dict = {}  # row statistics (std(X), mean(X), ...) defined by name, printed through it

    # -- building ---------------------------------------------------------
    def define(self, target, value, kind: str = "forward", step: int | None = None, partials=None):
        if not isinstance(target, (sp.Symbol, sp.MatrixSymbol)):
            raise SeqgradTypeError("target", target, "a SymPy Symbol or MatrixSymbol")
        if target in self._index:
            raise SeqgradValueError("target", str(target), "a name not defined yet in this program")
        value = as_sympy(value, "value")
        if isinstance(target, sp.MatrixSymbol) and isinstance(value, MatrixExpr) and value.shape != target.shape:
            raise SeqgradValueError("value", str(value), f"a matrix of shape {target.shape} like {target}")
        self._index[target] = len(self._defs)
        self._names[target.name] = target
        self._defs.append(Definition(target, value, kind, step, partials))
        from .rules import is_row_statistic

        if is_row_statistic(value):
            self._named_rows[value] = target
        return target

    def apply(self, template: Template, target, mapping, kind: str = "forward", step: int | None = None):
        value, partials = template.at(mapping, output=target)
        # partials are keyed by the placeholders; re-key them by the actual symbols
        keyed: dict = {}
        for var, p in partials.items():
            actual = mapping.get(var, var)
            if isinstance(actual, (sp.Symbol, sp.MatrixSymbol)):
                keyed[actual] = keyed.get(actual, 0) + p
            elif p != 0 and _free(actual):
                raise SeqgradTypeError("mapping", actual, "symbols only for variables with a nonzero partial")
        return self.define(target, value, kind, step, keyed)

    # -- reading ----------------------------------------------------------
    def __iter__(self):
        return iter(self._defs)

    def __len__(self) -> int:
        return len(self._defs)

    def __contains__(self, symbol) -> bool:
        return symbol in self._index

    def __getitem__(self, symbol) -> Definition:
        if isinstance(symbol, str):
            if symbol in self._names:
                return self._defs[self._index[self._names[symbol]]]
            raise SeqgradValueError("name", symbol, "a target of this program, e.g. " + ", ".join(str(d.target) for d in self._defs[:4]))
        return self._defs[self._index[symbol]]

    def definitions(self, kind: str | Iterable[str] | None = None) -> list[Definition]:
        if kind is None:
            return list(self._defs)
        kinds = {kind} if isinstance(kind, str) else set(kind)
        return [d for d in self._defs if d.kind in kinds]

    def leaves(self) -> list[sp.Basic]:
        """Symbols used but never defined (parameters and data), in order of first use."""
        seen: dict = {}
        for d in self._defs:
            for s in sorted(_free(d.value), key=sp.default_sort_key):
                if s not in self._index and s not in seen:
                    seen[s] = None
        return list(seen)

    def needed(self, exprs: Iterable, kinds: Iterable[str] | None = None, stop=()) -> list[Definition]:
        """The definitions ``exprs`` depend on (through definitions of ``kinds``, not through the
        symbols in ``stop``), in program order."""
        kinds = None if kinds is None else set(kinds)
        marked: set[int] = set()
        stack = [s for e in exprs for s in _free(e)]
        while stack:
            s = stack.pop()
            i = self._index.get(s)
            if i is None or i in marked or s in stop or (kinds is not None and self._defs[i].kind not in kinds):
                continue
            marked.add(i)
            stack.extend(_free(self._defs[i].value))
        return [self._defs[i] for i in sorted(marked)]

    # -- the chain rule -----------------------------------------------------
    def backward(self, seeds: Mapping, adjoint_name: Callable[[sp.Basic], str | None],
                 emit: Mapping | None = None) -> dict:
        """Reverse-mode accumulation over the definitions present now.

        Every named sensitivity becomes a ``"backward"`` definition (sum over
        the uses of its target); ``emit[target]`` lists extra ``(symbol,
        value)`` definitions (such as ``e := yhat - y``) appended when the
        sweep reaches ``target`` (a third item overrides the kind ``"backward"``).  Returns (and stores in ``self.gradients``)
        the sensitivities of the leaves.
        """
        contributions: dict = {}
        for target, seed in seeds.items():
            contributions.setdefault(target, []).append(seed)
        emit = dict(emit or {})
        for d in reversed(list(self._defs)):
            for symbol, value, *kind in emit.pop(d.target, ()):
                self.define(symbol, value, kind=kind[0] if kind else "backward", step=d.step)
            terms = contributions.get(d.target)
            if not terms:
                continue
            total = _sum(terms)
            name = adjoint_name(d.target)
            if name is not None:
                adj = name if isinstance(name, (sp.Symbol, sp.MatrixSymbol)) else (
                    sp.MatrixSymbol(name, *d.target.shape) if d.is_matrix else sp.Symbol(name))
                self.define(adj, total, kind="backward", step=d.step)
                total = adj
            self.adjoints[d.target] = total
            for symbol, local in self._local(d, total):
                contributions.setdefault(symbol, []).append(local)
        grads = {s: _sum(terms) for s, terms in contributions.items() if s not in self._index}
        self.gradients.update(grads)
        return grads

    def _local(self, d: Definition, G) -> list[tuple[sp.Basic, sp.Basic]]:
        if d.is_matrix:
            if d.partials:
                return [(s, sp.HadamardProduct(G, p)) for s, p in d.partials.items()]
            pairs = pullback(d.value, G, d.target)
            if self._named_rows:  # std(X) defined as sigma: the rules' results print sigma
                pairs = [(s, _replace_in_order(c, self._named_rows)) for s, c in pairs]
            return pairs
        partials = d.partials if d.partials is not None else {s: sp.diff(d.value, s) for s in sorted(_free(d.value), key=sp.default_sort_key)}
        return [(s, fast_mul(G, p) if p != 1 else G) for s, p in partials.items() if p != 0]

    # -- closed forms -------------------------------------------------------
    def size(self, expr, kinds: Iterable[str] | None = ("backward",)) -> int:
        """Expression-tree nodes of the closed form :meth:`expand` would build (nothing is built)."""
        key = None if kinds is None else frozenset(kinds)
        sizes = self._sizes.get(key)
        if sizes is None or len(sizes) != len(self._defs):  # one pass over the program, shared by later calls
            sizes = {}
            for d in self._defs:
                if key is None or d.kind in key:
                    sizes[d.target] = _tree_size(d.value, sizes)
            sizes = self._sizes[key] = _Sizes(sizes, len(self._defs))
        return _tree_size(expr, sizes.table)

    def expand(self, expr, kinds: Iterable[str] | None = ("backward",), max_terms: int | None = None,
               what: str | None = None):
        """``expr`` with the definitions of ``kinds`` substituted (``None``: every definition)."""
        limit = MAX_TERMS if max_terms is None else max_terms
        estimate = self.size(expr, kinds)
        if estimate > limit:
            raise SizeGuardError("expand", what or sp.sstr(expr)[:60], limit, estimate)
        subs: dict = {}
        for d in self.needed([expr], kinds):
            subs[d.target] = d.value.xreplace(subs)
        return expr.xreplace(subs)

    def evaluate(self, expr, values: Mapping):
        """``expr`` with the leaves set to ``values`` and every definition it needs evaluated in order.

        A defined symbol given in ``values`` keeps the given value (its definition is not used).  ``expr`` may
        be a list or tuple of expressions (a loss and its gradients): the definitions they share are evaluated
        once, and a list of their values comes back.
        """
        env = self._values(values)
        exprs = list(expr) if isinstance(expr, (list, tuple)) else [expr]
        for d in self.needed(exprs, stop=env):
            env[d.target] = _evaluate(d.value, env)
        out = [_evaluate(e, env) for e in exprs]
        return out if isinstance(expr, (list, tuple)) else out[0]

    def _values(self, values) -> dict:
        """``values`` checked: a non-empty mapping from symbols of this program (leaves or defined
        targets) to numbers, explicit matrices or expressions (text goes through the safe parser)."""
        if not isinstance(values, Mapping):
            raise SeqgradTypeError("values", values, "a mapping {symbol: value} for the leaves of the program")
        if not values:
            raise SeqgradValueError("values", values, "at least one symbol to set (with no values the expression "
                                                      "would come back unevaluated): " + _names(self.leaves()))
        known = set(self.leaves()) | set(self._index)
        env = {}
        for key, value in values.items():
            if key not in known:
                raise SeqgradValueError("values", key, "symbols of the program: " + _names(self.leaves())
                                        + " (or a defined symbol)")
            if isinstance(value, sp.MatrixBase) or getattr(value, "ndim", 0):
                env[key] = sp.ImmutableMatrix(value) if not isinstance(value, sp.MatrixBase) else value
            else:
                env[key] = as_sympy(value, f"values[{key}]")
        return env

    # -- output ---------------------------------------------------------------
    def __str__(self) -> str:
        """The recursion as the text prints it: textbook order, the zero initial state dropped."""
        return self.text()

    def text(self, notation=None) -> str:
        """:meth:`__str__` under ``notation``'s renames (:func:`derive.program_text.sstr`)."""
        from .term_order import drop_zero_state

        rows = drop_zero_state([(d.target, [d.value]) for d in self._defs])
        return "\n".join(f"{sstr(lhs, notation)} = {sstr(rhs[0], notation)}" for lhs, rhs in rows)

    def pretty(self) -> str:
        """:meth:`__str__` in unicode (:func:`pretty`), for a terminal."""
        from .term_order import drop_zero_state

        rows = drop_zero_state([(d.target, [d.value]) for d in self._defs])
        return "\n".join(f"{pretty(lhs)} = {pretty(rhs[0])}" for lhs, rhs in rows)

    def __repr__(self) -> str:
        return f"<Program {self.name!r}: {len(self._defs)} definitions>"

    def latex(self, kinds: str | Iterable[str] | None = None, width: int = 60, notation=None) -> str:
        """A complete display (``align*``, see :func:`latex_aligned`), one definition a line, under ``notation``."""
        return latex_aligned([(d.target, d.value) for d in self.definitions(kinds)], width, notation)

    def _repr_latex_(self) -> str:
        from .latex_settings import notebook_notation

        return self.latex(notation=notebook_notation())

    def dot(self) -> str:
        """The dependency graph as Graphviz DOT text (leaves as ellipses, definitions as boxes)."""
        lines = [f"digraph {_dot_id(self.name or 'program')} {{", "  rankdir=LR;"]
        for leaf in self.leaves():
            lines.append(f"  {_dot_id(str(leaf))} [shape=ellipse];")
        for d in self._defs:
            style = ", style=dashed" if d.kind == "backward" else ""
            lines.append(f"  {_dot_id(str(d.target))} [shape=box{style}];")
        for d in self._defs:
            for s in sorted(_free(d.value), key=sp.default_sort_key):
                lines.append(f"  {_dot_id(str(s))} -> {_dot_id(str(d.target))};")
        lines.append("}")
        return "\n".join(lines) + "\n"


def _evaluate(expr, env):
    value = expr.xreplace(env) if isinstance(expr, sp.Basic) else expr
    if isinstance(value, (MatrixExpr, SquaredNorm)) or (isinstance(value, sp.Basic) and value.has(MatrixExpr)):
        value = _explicit(value)
    return value


def _explicit(node):
    """``node`` with every matrix operation carried out, bottom up: each operation is applied to its
    operands once they are explicit matrices (``doit(deep=False)``), so the entries already computed are
    not walked again (a deep ``doit`` re-visits every scalar entry at every level: LayerNorm's program at
    d = 64 spent 3/4 of its time there)."""
    if isinstance(node, sp.MatrixBase) or not isinstance(node, sp.Basic):
        return node
    if not isinstance(node, (MatrixExpr, SquaredNorm)) and not node.has(MatrixExpr):
        return node
    args = [_explicit(a) for a in node.args]
    explicit = _explicit_product(node, args)
    if explicit is not None:
        return explicit
    if any(a is not b for a, b in zip(args, node.args)):
        node = node.func(*args)
    value = node.doit(deep=False)
    if isinstance(value, MatrixExpr) and not isinstance(value, sp.MatrixBase):
        value = value.as_explicit()
    return value


def _explicit_product(node, args):
    """A sum, matrix product or Hadamard product of explicit operands, carried out directly (SymPy's own
    ``doit`` first sorts the operands by a key that prints every entry of every matrix); None for anything else."""
    if not any(isinstance(a, sp.MatrixBase) for a in args):
        return None
    if isinstance(node, sp.HadamardProduct) and all(isinstance(a, sp.MatrixBase) for a in args):
        return sp.ImmutableMatrix(functools.reduce(lambda a, b: a.multiply_elementwise(b), args))
    if isinstance(node, sp.MatAdd) and all(isinstance(a, sp.MatrixBase) for a in args):
        return sp.ImmutableMatrix(functools.reduce(operator.add, args))
    if isinstance(node, sp.MatMul) and all(isinstance(a, sp.MatrixBase) or not isinstance(a, MatrixExpr) for a in args):
        return sp.ImmutableMatrix(functools.reduce(operator.mul, args))
    return None


def _names(symbols, limit: int = 8) -> str:
    names = [str(s) for s in symbols]
    return ", ".join(names[:limit]) + (", ..." if len(names) > limit else "")


def _dot_id(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def latex_aligned(rows: Iterable[tuple], width: int = 60, notation=None) -> str:
    """A complete display of (lhs, rhs) pairs of SymPy objects, for a document body or a notebook
    (:func:`derive.latex_layout.display`): one or more ``align*`` environments (amsmath), rows
    aligned at ``=``, long sums and products broken over lines, a long derivation split into
    consecutive displays so that it breaks across pages; the zero initial state is dropped unless
    ``notation.show_zero_state``.  Return it as it is from ``_repr_latex_`` (no ``$$`` around it)."""
    from .latex_layout import display

    return display(list(rows), notation, width=width)
