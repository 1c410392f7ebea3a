r"""A recurrent cell is its step equations: one definition, every derivation.

A :class:`Cell` is written the way the text writes a cell: states with their
initial value (``h_{-1} = 0``), the input ``x_t``, parameters, named
intermediates and the state updates of one step, an output head and a loss.
The step equations are written once, in the text's scalar notation, over the
names of one step: ``x`` is ``x_t``, ``h_prev`` is ``h_{t-1}``, ``z`` is
``z_t``.  From that one definition come

* :meth:`Cell.general`: the derivation at a **general step t and length T**
  (forward recursion, backward recursion ``g_t^h = ... g_{t+1}^z ...``, the
  transition Jacobian ``J_t = dh_t/dh_{t-1}``, every shared-weight gradient as
  a sum ``sum_{t=0}^{T-1}``), derived from the step equations alone;
* :meth:`Cell.unroll`: the unrolled program for a concrete T (the named
  intermediates ``z_0, h_0, g_0^z, ...``, closed forms behind the size guard);
* the compiled loop and the autograd twin (:mod:`crosscheck.cells`), which
  read the same step.

Scalar and vector cells are one code path: give ``sizes`` (``D``, ``H``, ``C``)
and the same equations are read as row-vector equations, a parameter declared
with a matrix shape applied as ``x W^T`` (stored out x in, as in torch) and
written with a capital, as the text does (``w_x`` becomes ``W_x``), a product
of two vectors as the elementwise product ``o``, a function of a vector
entrywise.

>>> from seqgrad.derive.cell import Cell
>>> rnn = Cell("z = w_x*x + w_h*h_prev; h = tanh(z)", states="h", params="w_x w_h w_o", head="w_o*h")
>>> gen = rnn.general()
>>> gen.grad("w_h")
Sum_{t=0}^{T-1} g_t^z*h_{t-1}
>>> print(gen.backward_rows()[2])
g_t^h = g_{t+1}^z*w_h   (t < T - 1)
>>> gen.grad("w_h").at(3)
g_0^z*h_{-1} + g_1^z*h_0 + g_2^z*h_1
>>> gen.transition()
w_h*(1 - h_t**2)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping

import sympy as sp
from sympy.matrices.expressions.matexpr import MatrixExpr

from seqgrad import validate
from seqgrad.errors import SeqgradTypeError, SeqgradValueError

from seqgrad import operations as registry

from . import activations, operations, rules, whitelist
from .elementwise import Elementwise, SquaredNorm
from .program import Program, latex_aligned
from .program_text import sstr
from .cell_loss import B, LOSS_KINDS, REDUCTIONS, CrossEntropy, Loss, _kink_convention, _partials, error_value
from .cell_names import RESERVED, CellError, _names, _Symbols, validate_name
from .latex_settings import Partial, notebook_notation
from .sequence import Sensitivity, SensitivityMatrix, adjoint, index_text, is_sequence_value
from .step_sum import MatStepSum, StepSum, T, _is_zero, _make_sum, _StepSumMixin, t

__all__ = ["Cell", "Loss", "GeneralDerivation", "StepSum", "MatStepSum", "CellError", "RESERVED", "user_functions",
           "LOSS_KINDS", "REDUCTIONS", "index_text"]


def user_functions(functions: Mapping[str, object] | None, taken: Iterable[str] = ()) -> dict[str, object]:
    """A cell's own functions (``functions=``) as operations of their own (:func:`derive.operations.define`),
    beside the generic ``phi``; every operation of the registry is read by the parser itself."""
    out: dict[str, object] = {"phi": activations.phi}
    taken = set(taken)
    if functions is not None and not isinstance(functions, Mapping):
        raise SeqgradTypeError("functions", functions, "a mapping name -> sympy.Lambda, callable or Operation")
    for fname, fn in (functions or {}).items():
        validate_name("functions", fname)
        if fname == "phi" or whitelist.reserved(fname):
            raise CellError("functions", fname, f"a new name ({fname!r} is already an operation: register a different name)")
        if fname in taken:
            raise CellError("functions", fname, f"a name that is not also a variable of the cell ({fname!r} is one)")
        if not callable(fn) and not isinstance(fn, registry.Operation):
            raise SeqgradTypeError(f"functions[{fname!r}]", fn, "a sympy.Lambda, a one-argument callable or an Operation")
        out[fname] = operations.define(fname, fn)
    return out


class Cell:
    r"""A recurrent cell from its step equations (see the module docstring).

    ``equations``
        ``"z = w_x*x + w_h*h_prev; h = tanh(z)"`` (text, through the safe parser:
        lines or ``;``-separated ``name = expression``) or a list of
        ``(name, expression)`` pairs of SymPy expressions over ``sympy.Symbol``
        names.  ``NAME_prev`` is the state ``NAME`` at the previous step.
    ``states``
        The names (among the equations) carried to the next step, each starting
        at 0 (``h_{-1} = 0``): ``"h"``, ``"h c"`` or a list.
    ``params``
        The parameters: names (scalar cell) or a mapping name -> shape for the
        vector cell, shapes written with the size letters of ``sizes``:
        ``{"w_x": ("H", "D"), "w_h": ("H", "H"), "b_h": ("H",), "w_o": ("C", "H")}``.
    ``head``
        ``yhat`` as an expression of the states (``"w_o*h"``).
    ``loss, on, reduction, batch``
        See :class:`Loss`.
    ``sizes``
        ``None`` for the scalar cell, or ``{"D": 3, "H": 4, "C": 2}`` (input,
        state and output widths; more letters may be used in shapes).
    ``functions``
        Extra activations by name: a ``sympy.Lambda`` or any one-argument
        callable building a SymPy expression (softplus, a leaky ReLU, ...).
    ``display``
        Printed names for equation names: ``{"zr": "z^r"}`` prints ``z_t^r`` and ``g_t^{z^r}``.
    ``named``
        Intermediates that get a named sensitivity besides the states and the
        pre-activations (names starting with ``z``).
    """

    def __init__(self, equations, *, states, params, head, input: str = "x", loss: str = "squared",
                 on="final", reduction: str = "sum", batch: str = "sum", sizes: Mapping[str, int] | None = None,
                 functions: Mapping[str, object] | None = None, name: str = "cell", named: Iterable[str] = (),
                 input_size: str = "D", output_size: str = "C", display: Mapping[str, str] | None = None):
        self.name = validate_name("name", name)
        self.display = dict(display or {})
        for k, v in self.display.items():
            if not (isinstance(v, str) and re.fullmatch(r"[A-Za-z][A-Za-z0-9]*(\^[A-Za-z0-9]+)?", v)):
                raise CellError("display", {k: v}, "a printed name such as z^r (letters, one optional superscript)")
        self.loss = Loss.make(loss, on, reduction, batch)
        self.input = validate_name("input", input)
        if isinstance(states, Mapping):
            self.states = _names("states", list(states))
            self.state_sizes = {st: states[st] for st in self.states}
        else:
            self.states = _names("states", states)
            self.state_sizes = {st: "H" for st in self.states}
        if self.input in self.states:
            raise CellError("states", self.input, f"names other than the input's ({self.input!r})")
        self.sizes = None if sizes is None else {validate_name("sizes", k): validate.integer(f"sizes[{k!r}]", v, minimum=1)
                                                 for k, v in dict(sizes).items()}
        self.vector = self.sizes is not None
        self.param_shapes = self._param_shapes(params)
        self.functions = user_functions(functions, [self.input, *self.states, *self.param_shapes])
        self.input_size, self.output_size = input_size, output_size
        if self.vector:
            for letter in (input_size, output_size):
                if letter not in self.sizes:
                    raise CellError("sizes", self.sizes, f"a width for {letter!r} (input {input_size}, output {output_size})")
        # the local names of one step and their symbols
        self.locals: dict[str, sp.Symbol] = {}
        for n in [self.input] + list(self.param_shapes) + [f"{s}_prev" for s in self.states]:
            self.locals[n] = sp.Symbol(n)
        self.equations = self._equations(equations)
        missing = [s for s in self.states if s not in dict(self.equations)]
        if missing:
            raise CellError("states", missing, "names defined by the equations (" + ", ".join(n for n, _ in self.equations) + ")")
        self.head = self._parse("head", head, allowed=set(self.locals))
        self.named = set(self.states) | {n for n, _ in self.equations if n.startswith("z")} | set(_names("named", named, empty=True))
        self._shapes = self._infer_shapes()
        self._check_reached()

    # -- definition ---------------------------------------------------------------
    def _param_shapes(self, params) -> dict[str, tuple]:
        if isinstance(params, str):
            params = params.replace(",", " ").split()
        if isinstance(params, Mapping):
            items = list(params.items())
        else:
            try:
                items = [(p, ()) for p in params]
            except TypeError:
                raise SeqgradTypeError("params", params, "names, or a mapping name -> shape") from None
        out: dict[str, tuple] = {}
        for pname, shape in items:
            validate_name("params", pname)
            if pname in out:
                raise CellError("params", pname, "each parameter named once")
            if pname == self.input or pname in self.states:
                raise CellError("params", pname, f"a name that is not also the input or a state ({pname!r} is "
                                + ("the input" if pname == self.input else "a state") + ")")
            shape = () if shape is None else (tuple(shape) if not isinstance(shape, str) else tuple(shape.split()))
            if len(shape) > 2:
                raise CellError(f"params[{pname!r}]", shape, "a shape of at most two sizes (out, in) or (n,)")
            if self.vector:
                for letter in shape:
                    if not isinstance(letter, int) and letter not in self.sizes:
                        raise CellError(f"params[{pname!r}]", shape, "sizes named in sizes=" + str(sorted(self.sizes)))
            out[pname] = shape
        if not out:
            raise CellError("params", params, "at least one parameter")
        return out

    def _parse(self, argument: str, value, allowed: set):
        from .safe_parse import parse_expression

        if isinstance(value, str):
            if re.search(r"\b\w+_prev(_prev|\d)\b", value):
                raise CellError(argument, value, "first-order recurrences only: NAME_prev is the state at t-1; "
                                "an order-2 term (h_{t-2}) can be written with a second state")
            for stem in re.findall(r"\b([A-Za-z]\w*?)_prev\b", value):
                if stem not in self.states:
                    raise CellError("states", self.states, f"every NAME_prev read by the equations declared as a state "
                                    f"({argument} reads {stem}_prev)")
            expr = parse_expression(value, variables=sorted(allowed), argument=argument, functions=self.functions)
        elif isinstance(value, sp.Basic):
            expr = operations.real_nodes(value)
        else:
            raise SeqgradTypeError(argument, value, "an expression (text or SymPy)")
        self._check_functions(expr, argument, value)
        # one symbol per name: the parser's real symbols and the caller's plain ones alike
        rename = {}
        for s in expr.free_symbols:
            if s.name not in allowed:
                if re.fullmatch(r"\w+_prev\d+|\w+_prev_prev", s.name):
                    raise CellError(argument, str(value), "first-order recurrences only: NAME_prev is the state at "
                                    "t-1; an order-2 term (h_{t-2}) can be written with a second state")
                raise CellError(argument, str(value), "known names only: " + ", ".join(sorted(allowed))
                                + f" (unknown: {s.name})")
            rename[s] = self.locals[s.name]
        expr = expr.xreplace(rename)
        if expr.has(sp.Derivative, sp.Integral, sp.Subs):
            raise CellError(argument, str(value), "an expression without unevaluated derivatives or integrals")
        return expr

    def _check_functions(self, expr, argument, value) -> None:
        """Refuse a function that is not an operation (of the registry, or the cell's own)."""
        own = set(self.functions.values()) | {activations.dphi}
        for f in expr.atoms(sp.Function):
            if f.func not in own and operations.operation_of(f) is None and not isinstance(f, sp.Heaviside):
                raise CellError(argument, str(value), f"operations of the registry or functions= only ({f.func} is "
                                "neither; see docs/adding-an-operation.md)")

    def _equations(self, equations) -> list[tuple[str, sp.Expr]]:
        if isinstance(equations, str):
            lines = [ln.strip() for ln in re.split(r"[;\n]", equations) if ln.strip()]
            pairs = []
            for line in lines:
                lhs, eq, rhs = line.partition("=")
                if not eq or not rhs.strip():
                    raise CellError("equations", line, "lines 'name = expression'")
                pairs.append((lhs.strip(), rhs))
        else:
            try:
                pairs = [(n, v) for n, v in equations]
            except (TypeError, ValueError):
                raise SeqgradTypeError("equations", equations, "text 'z = ...; h = ...' or (name, expression) pairs") from None
        if not pairs:
            raise CellError("equations", equations, "at least one equation")
        out = []
        for name, value in pairs:
            validate_name("equations", name)
            if name in self.locals:
                raise CellError("equations", name, "a new name (it is already " +
                                ("an input" if name == self.input else "a parameter or a previous state") + ")")
            expr = self._parse(f"equation {name}", value, set(self.locals))
            self.locals[name] = sp.Symbol(name)
            out.append((name, expr))
        return out

    def _check_reached(self) -> None:
        used = set(self.head.free_symbols)
        for _, e in self.equations:
            used |= e.free_symbols
        for p in self.param_shapes:
            if self.locals[p] not in used:
                raise CellError("params", p, "parameters the equations or the head use (its gradient would be zero)")
        reads_state = any(self.locals[s] in self.head.free_symbols for s in self.states)
        if not reads_state:
            raise CellError("head", str(self.head), "an expression of the states " + ", ".join(self.states))

    # -- shapes and the vector reading -------------------------------------------------------
    def _size(self, letter):
        return letter if isinstance(letter, int) else self.sizes[letter]

    def param_symbol(self, name: str):
        """The symbol of parameter ``name`` in this instance (``W_x`` for a matrix of the vector cell)."""
        shape = self.param_shapes[name]
        if not self.vector:
            return sp.Symbol(name)
        if len(shape) == 2:
            display = name[0].upper() + name[1:]
            return sp.MatrixSymbol(display, self._size(shape[0]), self._size(shape[1]))
        if len(shape) == 1:
            return sp.MatrixSymbol(name, 1, self._size(shape[0]))
        return sp.Symbol(name)

    @property
    def parameter_names(self) -> list[str]:
        """The parameters' names as the user passes values (``W_x`` for a matrix of the vector cell)."""
        return [str(self.param_symbol(p)) for p in self.param_shapes]

    def _infer_shapes(self) -> dict[str, tuple | None]:
        """Row width of every local name (None: scalar); checks the vector reading of each equation."""
        shapes: dict[str, tuple | None] = {}
        if not self.vector:
            return {n: None for n in self.locals}
        shapes[self.input] = (1, self.sizes[self.input_size])
        for p in self.param_shapes:
            s = self.param_symbol(p)
            shapes[p] = tuple(s.shape) if isinstance(s, sp.MatrixSymbol) else None
        for st in self.states:
            letter = self.state_sizes[st]
            if letter not in self.sizes:
                raise CellError("states", {st: letter}, "a width named in sizes=" + str(sorted(self.sizes)))
            shapes[f"{st}_prev"] = (1, self.sizes[letter])
        for n, e in self.equations:
            shapes[n] = self._lift(e, shapes, f"equation {n}")[1]
            if n in self.states and shapes[n] != shapes[f"{n}_prev"]:
                raise CellError(f"equation {n}", sstr(e), f"the state's width {self.state_sizes[n]} = "
                                f"{shapes[n + '_prev'][1]} at every step (got {shapes[n]})")
        head_shape = self._lift(self.head, shapes, "head")[1]
        want = (1, self.sizes[self.output_size])
        if head_shape != want:
            raise CellError("head", sstr(self.head), f"a row of width {self.output_size} = {want[1]} (got {head_shape})")
        return shapes

    def _lift(self, expr, shapes, argument):
        """The row-vector reading of a scalar-notation expression: (matrix expression, shape)."""
        if expr.is_Number:
            return expr, None
        if expr.is_Symbol:
            shape = shapes.get(expr.name)
            if shape is None:
                return expr, None
            return sp.MatrixSymbol(expr.name, *shape), shape
        if expr.is_Add:
            parts = [self._lift(a, shapes, argument) for a in expr.args]
            rows = {s for _, s in parts if s is not None}
            if len(rows) > 1:
                raise CellError(argument, sstr(expr), f"terms of one shape (got {sorted(rows)})")
            if not rows:
                return sp.Add(*[p for p, _ in parts]), None
            shape = rows.pop()
            terms = [p if s is not None else self._broadcast(p, shape, argument, expr) for p, s in parts]
            return sp.MatAdd(*terms), shape
        if expr.is_Mul:
            parts = [self._lift(a, shapes, argument) for a in expr.args]
            scalars = [p for p, s in parts if s is None]
            matrix = {n for n, sh in self.param_shapes.items() if len(sh) == 2}
            mats = [(p, s) for p, s in parts if isinstance(p, sp.MatrixSymbol) and p.name in matrix]
            rows = [(p, s) for p, s in parts if s is not None and not (isinstance(p, sp.MatrixSymbol) and p.name in matrix)]
            coeff = sp.Mul(*scalars)
            if not rows and not mats:
                return coeff, None
            if coeff.free_symbols:
                raise CellError(argument, sstr(expr), "numeric factors only beside vectors (a scalar parameter times a "
                                "vector is not a cell of the text; use a row parameter of shape (H,))")
            if len(mats) > 1 or (mats and len(rows) != 1):
                raise CellError(argument, sstr(expr), "a matrix parameter applied to one row vector (x W^T)")
            if mats:
                (W, ws), (r, rs) = mats[0], rows[0]
                if ws[1] != rs[1]:
                    raise CellError(argument, sstr(expr), f"matching widths: {r} is 1 x {rs[1]}, {W} is {ws[0]} x {ws[1]}")
                out, shape = sp.MatMul(r, W.T), (1, ws[0])
            else:
                widths = {s for _, s in rows}
                if len(widths) > 1:
                    raise CellError(argument, sstr(expr), f"elementwise products of rows of one width (got {sorted(widths)})")
                out = rows[0][0] if len(rows) == 1 else sp.HadamardProduct(*[p for p, _ in rows])
                shape = rows[0][1]
            return (out if coeff == 1 else sp.MatMul(coeff, out)), shape
        # anything else is a function of its row-valued names, applied entrywise
        free = [s for s in expr.free_symbols if shapes.get(s.name) is not None]
        if not free:
            return expr, None
        if len(free) == 1 and len(self.param_shapes.get(free[0].name, ())) != 2:
            (s,) = free
            d = sp.Dummy("u")
            return Elementwise(sp.Lambda(d, expr.xreplace({s: d})), sp.MatrixSymbol(s.name, *shapes[s.name])), shapes[s.name]
        if len(expr.args) == 1 and not expr.is_Pow:
            inner, shape = self._lift(expr.args[0], shapes, argument)
            if shape is None or shape[0] != 1:
                raise CellError(argument, sstr(expr), "a function applied to a row vector")
            d = sp.Dummy("u")
            return Elementwise(sp.Lambda(d, expr.func(d)), inner), shape
        raise CellError(argument, sstr(expr), "name the argument of a function of several vectors as an intermediate "
                        "(e.g. a = ...; h = tanh(a))")

    def _broadcast(self, scalar, shape, argument, expr):
        if scalar.free_symbols:
            raise CellError(argument, sstr(expr), "numbers only added to a vector (1 - u), or a bias row of shape (H,)")
        return sp.MatMul(scalar, sp.OneMatrix(*shape)) if scalar != 1 else sp.OneMatrix(*shape)

    # -- instances --------------------------------------------------------------------------
    def shape_of(self, name: str):
        return self._shapes.get(name)

    def _local_value(self, expr, argument):
        """The value of one equation in this instance: the expression itself (scalar) or its vector reading."""
        return self._lift(expr, self._shapes, argument)[0] if self.vector else expr

    def step_values(self) -> list[tuple[str, sp.Basic]]:
        """(name, value) of each step equation over the local names (vector cells: matrix expressions)."""
        return [(n, self._local_value(e, f"equation {n}")) for n, e in self.equations]

    def head_value(self):
        return self._local_value(self.head, "head")

    def local_symbol(self, name: str):
        shape = self._shapes.get(name)
        return sp.MatrixSymbol(name, *shape) if shape else sp.Symbol(name)

    def target_shape(self):
        return (1, self.sizes[self.output_size]) if self.vector else None

    def slope(self, value, target):
        """The local slope of an entrywise definition, written through its output where the text does
        (tanh: ``1 - h**2``, sigmoid: ``h*(1 - h)``), else in its argument; with the kink convention:
        ``relu'(0) = 0`` (torch.relu), ``max``/``min`` split a tie evenly (torch.maximum)."""
        f = value.function
        d = f.variables[0]
        prime = sp.diff(f.expr, d)
        prime = _kink_convention(f.expr, prime)
        out = sp.Dummy("y")
        through_output = prime.xreplace({f.expr: out}) if f.expr != d else prime
        if not through_output.has(d) and through_output.has(out):
            return sp.Lambda(out, through_output), target
        return sp.Lambda(d, prime), value.expr

    def unroll(self, steps: int) -> "derive.cell_unrolled.UnrolledCell":  # noqa: F821
        """The unrolled program of ``steps`` positions and its backward pass (the text's Table 3 form)."""
        from .cell_unrolled import UnrolledCell

        return UnrolledCell(self, validate.integer("steps", steps, minimum=1))

    @classmethod
    def from_torch(cls, module, *, states=None, example=None, head=None, loss="squared", on="final",
                   reduction: str = "sum", batch: str = "sum", name: str | None = None) -> "Cell":
        """The cell of a PyTorch module, its weights as the parameter values (``cell.torch.values()``).

        ``module`` is ``nn.RNN``/``nn.GRU``/``nn.LSTM`` (any layers, bias, batch_first),
        ``nn.RNNCell``/``nn.GRUCell``/``nn.LSTMCell``, or a step module of your own with ``states``
        (the names of the states it carries, in the order of its arguments and results) and ``example``
        (the arguments of one step: ``(x_t, h_prev)``, ``(x_t, h_prev, c_prev)`` or ``(x_t, (h_prev,
        c_prev))``, tensors of shape (B, width)), traced with ``torch.fx``.  ``head``: None (``yhat`` is the
        state), an ``nn.Linear`` or a module or function of the state; ``loss``: ``"squared"``,
        ``"cross_entropy"`` or ``nn.CrossEntropyLoss``.  The reading lives in :mod:`derive.from_torch`
        (torch is imported only there, when a module is passed in); :func:`crosscheck.torch_cells.against_autograd`
        checks the derivation against the module's own autograd."""
        from .from_torch import read_module

        return read_module(cls, module, states=states, example=example, head=head, loss=loss, on=on,
                           reduction=reduction, batch=batch, name=name)

    def general(self) -> "GeneralDerivation":
        """The derivation at a general step t of a sequence of length T."""
        if not hasattr(self, "_general"):
            self._general = GeneralDerivation(self)
        return self._general

    def __repr__(self) -> str:
        kind = "scalar" if not self.vector else ", ".join(f"{k}={v}" for k, v in self.sizes.items())
        eqs = "; ".join(f"{n} = {sstr(e)}" for n, e in self.equations)
        return f"<Cell {self.name!r} ({kind}): {eqs}; yhat = {sstr(self.head)}; loss={self.loss.kind} on {self.loss.on}>"

    def _repr_latex_(self) -> str:
        return self.general()._repr_latex_()


# ---------------------------------------------------------------------------------------------
# the general-t derivation


class GeneralDerivation:
    r"""The cell's derivation at a general step t of a sequence of length T.

    Derived from the step equations alone: one step is a program over
    ``x_t``, ``h_{t-1}`` and the parameters; its backward pass, seeded at each
    state by what the rest of the sequence sends back (``rho``), gives the
    sensitivities at step t; the rest of the sequence sends back exactly what
    step t+1 sends to its previous state, so ``rho`` is that term shifted by one
    step (``g_{t+1}^z w_h``) plus the loss's direct term at t.  Shared weights
    collect one term per use: a sum over t.
    """

    def __init__(self, cell: Cell):
        self.cell = cell
        self.sym = _Symbols(cell)
        c = cell
        sh = c.shape_of
        self.params = {p: c.param_symbol(p) for p in c.param_shapes}
        self.x = self.sym.seq(c.input, t, sh(c.input))
        self.prev = {s: self.sym.seq(s, t - 1, sh(s)) for s in c.states}
        self.step = prog = Program(f"{c.name}_step_t")
        self.at_t = {}
        mapping = {c.local_symbol(c.input): self.x}
        mapping.update({c.local_symbol(p): self.params[p] for p in c.param_shapes})
        mapping.update({c.local_symbol(f"{s}_prev"): self.prev[s] for s in c.states})
        for name, value in c.step_values():
            target = self.sym.seq(name, t, sh(name))
            self.at_t[name] = target
            value_t = value.xreplace(mapping)
            prog.define(target, value_t, step=0, partials=_partials(c, value, value_t, target, mapping))
            mapping[c.local_symbol(name)] = target
        self.mapping = mapping
        # backward through one step, seeded at each state by rho_s (everything after step t)
        # (a name no user text can write: a parameter may be called rho_h)
        rho_syms = {s: (sp.MatrixSymbol(f"<rho of {s}>", *sh(s)) if c.vector else sp.Symbol(f"<rho of {s}>")) for s in c.states}
        self.rho = rho_syms
        named = {self.at_t[n] for n in c.named if n in self.at_t}
        grads = prog.backward({self.at_t[s]: rho_syms[s] for s in c.states},
                              lambda target: adjoint(target) if target in named else None)
        # the head at step t and its pullback
        self.yhat = self.sym.seq("yhat", t, c.target_shape())
        self.e = self.sym.seq("e", t, c.target_shape())
        self.head = head = Program(f"{c.name}_head_t")
        head_mapping = dict(mapping)
        head.define(self.yhat, c.head_value().xreplace(head_mapping), step=0)
        head_grads = head.backward({self.yhat: self.e}, lambda target: None)
        # rho_s = direct_s(t) * [t is a loss position] * scale + (what step t+1 sends to s_t)
        self.loss_indicator = {"final": sp.KroneckerDelta(t, T - 1), "every": sp.Integer(1)}.get(
            c.loss.on if isinstance(c.loss.on, str) else "", _Positions(t, *c.loss.on) if not isinstance(c.loss.on, str) else None)
        count = {"final": 1, "every": T}.get(c.loss.on if isinstance(c.loss.on, str) else "", len(c.loss.on) if not isinstance(c.loss.on, str) else 1)
        self.scale = c.loss.scale(count)
        self.direct = {s: head_grads.get(self.at_t[s]) for s in c.states}
        self.carry = {s: grads.get(self.prev[s]) for s in c.states}
        self.rho_value = {}
        for s in c.states:
            terms = []
            if self.direct[s] is not None:
                terms.append(_scaled(self.loss_indicator * self.scale, self.direct[s]))
            if self.carry[s] is not None:
                terms.append(self.carry[s].subs(t, t + 1))
            self.rho_value[s] = _add(terms, self.at_t[s])
        self.backward_defs = [d for d in prog.definitions("backward")]
        self.step_grads = {p: grads.get(sym) for p, sym in self.params.items()}
        self.head_grads = {p: head_grads.get(sym) for p, sym in self.params.items()}
        self.input_grad = grads.get(self.x)

    # -- instances: substitution of the step and the length ------------------------------------------
    def instantiate(self, expr, k: int, steps: int):
        """``expr`` at step ``t = k`` of a sequence of ``T = steps``: the step and the length substituted
        (``h_{t-1}`` is ``h_1`` at k = 2, the unrolled program's value), sensitivities past the end zero
        (``g_T^z = 0``) and, for a loss on the final step, ``yhat_{T-1}`` the unrolled program's ``yhat``."""
        value = expr.subs({t: k, T: steps})
        final = self.cell.loss.on == "final"
        out = {}
        for s in getattr(value, "free_symbols", ()):
            if not is_sequence_value(s) or not s.index.is_Integer:
                continue
            if isinstance(s, (Sensitivity, SensitivityMatrix)) and s.index >= steps:
                out[s] = self._zero(s.shape if isinstance(s, SensitivityMatrix) else None)
            elif final and not isinstance(s, (Sensitivity, SensitivityMatrix)) and s.base in ("yhat", "e"):
                shape = s.shape if isinstance(s, sp.MatrixSymbol) else None
                out[s] = self.sym.seq(s.base, None, shape) if s.index == steps - 1 else self._zero(shape)
        value = value.xreplace(out) if out else value
        if isinstance(value, (_StepSumMixin,)):
            return value
        return _tidy(value)

    # -- reading ----------------------------------------------------------------------------
    def forward_rows(self) -> list["Row"]:
        c = self.cell
        rows = [Row(self.sym.seq(s, -1, c.shape_of(s)), self._zero(c.shape_of(s))) for s in c.states]
        rows += [Row(d.target, d.value) for d in self.step.definitions("forward")]
        yhat_def = self.head.definitions("forward")[0]
        if c.loss.on == "final":
            rows.append(Row(self._final("yhat"), yhat_def.value.subs(t, T - 1)))
        else:
            rows.append(Row(yhat_def.target, yhat_def.value, self._where()))
        rows.append(Row(sp.Symbol("L"), self.loss_expression()))
        return rows

    def _final(self, base):
        return sp.MatrixSymbol(base, *self.cell.target_shape()) if self.cell.vector else sp.Symbol(base)

    def _zero(self, shape):
        return sp.ZeroMatrix(*shape) if shape else sp.Integer(0)

    def _where(self):
        if self.cell.loss.on == "every":
            return None
        return sp.Contains(t, sp.FiniteSet(*self.cell.loss.on), evaluate=False)

    def _at_last(self, expr):
        """``expr`` at the last step ``t = T - 1`` of a loss on the final step, its error the final ``e``."""
        return _tidy(expr.subs(t, T - 1).xreplace({self.e.subs(t, T - 1): self._final("e")}))

    def loss_expression(self):
        c = self.cell
        if c.loss.on == "final":
            yhat, y = self._final("yhat"), self._final("y")
            return self.scale * self._pointwise_loss(yhat, y)
        y = self.sym.seq("y", t, c.target_shape())
        term = self._pointwise_loss(self.yhat, y)
        if c.loss.on == "every":
            return self.scale * StepSum(term, 0, T - 1)
        return self.scale * sp.Add(*[term.subs(t, p) for p in c.loss.on])

    def _pointwise_loss(self, yhat, y):
        if self.cell.loss.kind == "squared":
            return sp.Rational(1, 2) * (SquaredNorm(yhat - y) if self.cell.vector else (yhat - y) ** 2)
        return CrossEntropy(yhat, y)

    def error_row(self) -> "Row":
        c = self.cell
        if c.loss.on == "final":
            yhat, y = self._final("yhat"), self._final("y")
            return Row(self._final("e"), error_value(c, yhat, y))
        return Row(self.e, error_value(c, self.yhat, self.sym.seq("y", t, c.target_shape())), self._where())

    def backward_rows(self) -> list["Row"]:
        """The backward recursion at a general step t: the error, each state's sensitivity (what the loss
        sends directly plus what step t+1 sends back), then the step's own sensitivities."""
        c = self.cell
        rows = [self.error_row()]
        for d in self.backward_defs:
            value = d.value
            state = next((s for s in c.states if value.has(self.rho[s])), None)
            if state is None:
                rows.append(Row(d.target, value))
                continue
            rho = self.rho[state]
            if c.loss.on == "final":
                # boundary: at T-1 only the loss's direct term; before it only the future steps
                direct = self.direct[state]
                last = value.xreplace({rho: _scaled(self.scale, direct) if direct is not None else self._zero(c.shape_of(state))})
                rows.append(Row(d.target.subs(t, T - 1), self._at_last(last)))
                carry = self.carry[state].subs(t, t + 1) if self.carry[state] is not None else self._zero(c.shape_of(state))
                rows.append(Row(d.target, _tidy(value.xreplace({rho: carry})), sp.StrictLessThan(t, T - 1, evaluate=False)))
            else:
                rows.append(Row(d.target, _tidy(value.xreplace({rho: self.rho_value[state]}))))
        if c.loss.on != "final":
            past = [n for n in c.named if n not in c.states and n in self.at_t] or list(c.states)
            rows += [Row(self.sym.adjoint(n, T, c.shape_of(n)), self._zero(c.shape_of(n))) for n in past]
        return rows

    def gradient(self, name: str):
        """dL/d``name`` for a parameter: the sum over its uses, as a sum over the steps ``t = 0..T-1``
        (step parameters) and over the loss positions (head parameters)."""
        allowed = list(self.params) + [str(s) for s in self.params.values()] + [self.cell.input]
        if name not in allowed:
            raise SeqgradValueError("name", name, "one of " + ", ".join(dict.fromkeys(allowed)))
        if name == self.cell.input:
            return self.input_grad if self.input_grad is not None else self._zero(self.cell.shape_of(self.cell.input))
        key = next(p for p, s in self.params.items() if name in (p, str(s)))
        sym = self.params[key]
        terms = []
        if self.step_grads[key] is not None:
            terms.append(_make_sum(self.step_grads[key], 0, T - 1, self))
        if self.head_grads[key] is not None:
            h = _scaled(self.scale, self.head_grads[key])
            if self.cell.loss.on == "final":
                terms.append(self._at_last(h))
            elif self.cell.loss.on == "every":
                terms.append(_make_sum(h, 0, T - 1, self))
            else:
                terms.append(_add([_tidy(h.subs(t, p)) for p in self.cell.loss.on], h))
        return _add(terms, sym)

    grad = gradient

    def gradient_rows(self) -> list["Row"]:
        rows = []
        for p, s in self.params.items():
            rows.append(Row(Partial(s), self.gradient(p)))
        rows.append(Row(Partial(self.x), self.gradient(self.cell.input)))
        return rows

    def transition(self, of: str | None = None, wrt: str | None = None):
        """``J_t = d s_t / d s'_{t-1}`` by forward mode over one step (states ``of``, ``wrt``; default the
        first state): ``w_h (1 - h_t^2)`` (scalar), ``diag(1 - h_t o h_t) W_h`` (vector)."""
        c = self.cell
        of = validate.choice("of", of or c.states[0], tuple(c.states))
        wrt = validate.choice("wrt", wrt or of, tuple(c.states))
        return step_tangent(self.step, self.at_t[of], self.prev[wrt], c.vector)

    def rows(self) -> list["Row"]:
        return self.forward_rows() + self.backward_rows() + self.gradient_rows()

    def latex(self, notation=None, width: int = 60) -> str:
        """The rows as a complete display (:func:`derive.latex_layout.display`) under ``notation``: each row's
        range of t set after it (``\\quad\\text{for } t < T - 1``), every index, name and label by the printer."""
        return latex_aligned([r.display_row() for r in self.rows()], width=width, notation=notation)

    def _repr_latex_(self) -> str:
        return self.latex(notebook_notation())  # already a complete display (align*), which Jupyter renders as it is

    def text(self, notation=None) -> str:
        """The rows as plain text, one a line, under ``notation``'s renames (:func:`derive.program_text.sstr`)."""
        return "\n".join(r.text(notation) for r in self.rows())

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        return f"<GeneralDerivation of {self.cell!r}>"


@dataclass(frozen=True)
class Row:
    """One line ``lhs = rhs`` of a derivation, with the range of t it holds for (None: every t)."""

    lhs: sp.Basic
    rhs: sp.Basic
    where: sp.Basic | None = None  # a relation in t: t < T - 1, Contains(t, {0, 3})

    def text(self, notation=None) -> str:
        """``lhs = rhs   (range)`` in plain text under ``notation``'s renames."""
        text = f"{sstr(self.lhs, notation)} = {sstr(self.rhs, notation)}"
        return text if self.where is None else f"{text}   ({sstr(self.where, notation)})"

    def __str__(self) -> str:
        return self.text()

    def display_row(self) -> tuple:
        """The row for :func:`derive.latex_layout.display`: ``(lhs, rhs)``, its range set after it as a note."""
        return (self.lhs, self.rhs) if self.where is None else (self.lhs, self.rhs, ("for ", self.where))


def direction(seed):
    """The tangent direction ``ḣ`` of a row-vector state (a name no user text can write)."""
    return sp.MatrixSymbol(f"<direction of {seed.name}>", *seed.shape)


def definition_tangent(d, tangents: Mapping):
    """The tangent of one definition of a vector step program, by the rule table (:func:`derive.rules.jvp`);
    an activation defined with its slope (``h = tanh(z)``, slope ``1 - h∘h``) gives ``slope ∘ ż``."""
    if d.partials:
        (pre, slope), = d.partials.items()
        return sp.HadamardProduct(slope, tangents[pre]) if pre in tangents else None
    return rules.jvp(d.value, tangents)


def scalar_tangent(d, tangents: Mapping):
    """The tangent of one definition of a scalar step program: ``sum_s (d value / d s) ṡ``."""
    partials = d.partials if d.partials is not None else {s: sp.diff(d.value, s) for s in d.value.free_symbols}
    terms = [p * tangents[s] for s, p in partials.items() if s in tangents]
    return sp.Add(*terms) if terms else None


def propagate(definitions: Iterable, tangents: dict, vector: bool, last=None) -> dict:
    """The tangents of ``definitions`` in order, added to ``tangents`` (the seeds), up to and including the
    definition of ``last``; a definition no tangent reaches gets none (a structural zero)."""
    for d in definitions:
        tangent = definition_tangent(d, tangents) if vector else scalar_tangent(d, tangents)
        if tangent is not None:
            tangents[d.target] = tangent
        if d.target == last:
            break
    return tangents


def step_tangent(program: Program, target, seed, vector: bool):
    """Forward-mode chain rule over a step program: d ``target`` / d ``seed`` with every other leaf held
    fixed (the Jacobian of a row-vector state, rows its entries, read off its tangent by
    :func:`derive.rules.jacobian`)."""
    start = direction(seed) if vector else sp.Integer(1)
    tangents = propagate(program.definitions("forward"), {seed: start}, vector, last=target)
    out = rules.jacobian(tangents.get(target), start) if vector else tangents.get(target)
    if out is None:
        return sp.ZeroMatrix(target.shape[1], seed.shape[1]) if vector else sp.Integer(0)
    return out


class _Positions(sp.Function):
    """``[t in P]``: 1 at a loss position, else 0 (``_Positions(t, p_1, p_2, ...)``)."""

    @classmethod
    def eval(cls, step, *positions):
        if step.is_Integer:
            return sp.Integer(1) if step in positions else sp.Integer(0)
        return None

    def _latex(self, printer):
        return r"\mathbb{1}\left[%s\right]" % printer._print(self._relation())

    def _sympystr(self, printer):
        return "[%s]" % printer._print(self._relation())

    def _relation(self):
        return sp.Contains(self.args[0], sp.FiniteSet(*self.args[1:]), evaluate=False)


def _scaled(coeff, expr):
    if coeff == 1:
        return expr
    if isinstance(expr, MatrixExpr):
        return sp.MatMul(coeff, expr)
    return coeff * expr


def _add(terms, like):
    terms = [x for x in terms if x is not None and not _is_zero(x)]
    if not terms:
        return sp.ZeroMatrix(*like.shape) if isinstance(like, MatrixExpr) else sp.Integer(0)
    if len(terms) == 1:
        return terms[0]
    return sp.MatAdd(*terms) if isinstance(terms[0], MatrixExpr) else sp.Add(*terms)


def _tidy(expr):
    """Drop zero matrices and unit factors left by instantiation (``g_T^z = 0``, ``delta = 1``)."""
    if isinstance(expr, MatrixExpr):
        return expr.doit(deep=False) if isinstance(expr, (sp.MatAdd, sp.MatMul)) else expr
    return expr


