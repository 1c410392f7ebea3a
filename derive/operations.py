r"""The SymPy and mpmath side of the operation registry (:mod:`seqgrad.operations`).

Every operation declared in :mod:`seqgrad.operations` gets here its **SymPy node**, built once and cached:

* a primitive whose SymPy derivative is the real one is SymPy's own function (``sympy.tanh``, ``sympy.erf``);
* a primitive whose SymPy derivative is not real-valued on SymPy's default (complex) symbols is a subclass
  of SymPy's function with the declared derivative (``abs``: ``d|z|/dz = sign(z)``, ``sign(0) = 0`` as
  ``torch.abs``; ``floor`` and ``sign``: 0), so a cell never sees ``Derivative(re(w), w)``;
* a composite marked ``inline`` is its definition (``relu(z)`` is ``Max(0, z)``, ``softplus(z)`` is
  ``log(1 + exp(z))``);
* any other composite is a function of its own (``gelu(z)``, ``sigmoid(z)``, a user's function): it prints
  by its name and glyph, differentiates by the declared derivative (or SymPy's derivative of its
  definition), evaluates to its definition at a number and rewrites to it with ``rewrite("definition")``.

:func:`define` turns a user's function (a ``sympy.Lambda``, a one-argument callable building a SymPy
expression, or an :class:`~seqgrad.operations.Operation`) into an operation of its own -- the same door
the built-in ones use; the numpy and torch implementations are its definition evaluated over the
registry's operations in that backend (:func:`evaluator`), so ``gelu`` defined with ``erf`` runs on
both backends.

>>> import sympy as sp
>>> z = sp.Symbol("z")
>>> node("gelu")(z).diff(z)
sqrt(2)*z*exp(-z**2/2)/(2*sqrt(pi)) + erf(sqrt(2)*z/2)/2 + 1/2
>>> node("relu")(z), node("abs")(z).diff(z)
(Max(0, z), sign(z))
>>> sp.latex(node("gelu")(z))
'\\operatorname{GELU}\\left(z\\right)'
"""

from __future__ import annotations

import dataclasses
import functools
import operator
from typing import Callable

import mpmath
import sympy as sp

from seqgrad import operations as registry
from seqgrad.errors import SeqgradTypeError, SeqgradValueError
from seqgrad.operations import Namespace, Operation

__all__ = ["node", "sympy_namespace", "mpmath_namespace", "operation_of", "define", "evaluator", "derivative",
           "nodes", "check_definition", "primitives"]


class SympyNamespace(Namespace):
    """The registry's operations as SymPy nodes."""

    def implementation(self, op: Operation):
        return _node(op)


def _sympy_helpers() -> dict:
    return {"maximum": sp.Max, "minimum": sp.Min, "heaviside": lambda x, h0: sp.Heaviside(x, sp.nsimplify(h0)),
            "pi": sp.pi, "e": sp.E}


@functools.lru_cache(maxsize=None)
def _sympy_ns(version: int) -> SympyNamespace:
    return SympyNamespace("sympy", sp, _sympy_helpers())


def sympy_namespace() -> SympyNamespace:
    """The registry's operations as SymPy nodes: ``ns.tanh``, ``ns.gelu``."""
    return _sympy_ns(registry.version())


def _mp_heaviside(x, h0):
    return mpmath.mpf(1) if x > 0 else (mpmath.mpf(0) if x < 0 else mpmath.mpf(h0))


@functools.lru_cache(maxsize=None)
def _mp_ns(version: int) -> Namespace:
    return Namespace("mpmath", mpmath, {"maximum": max, "minimum": min, "heaviside": _mp_heaviside,
                                        "pi": mpmath.pi, "e": mpmath.e})


def mpmath_namespace() -> Namespace:
    """The registry's operations in mpmath (at the caller's working precision)."""
    return _mp_ns(registry.version())


_NODES: dict[int, object] = {}  # id(Operation) -> its SymPy node (an Operation is never changed)


def _node(op: Operation):
    try:
        return _NODES[id(op)][1]
    except KeyError:
        pass
    built = _build(op)
    _NODES[id(op)] = (op, built)  # the operation is kept alive beside its id
    return built


def node(name: str):
    """The SymPy node of the registered operation ``name`` (a SymPy function class, or a builder)."""
    return _node(registry.get(name))


def nodes() -> dict[str, object]:
    """Every registered operation's SymPy node by name (the parser's functions)."""
    return {op.name: _node(op) for op in registry.operations()}


def operation_of(expr) -> Operation | None:
    """The operation a SymPy function application belongs to (None for anything else)."""
    func = getattr(expr, "func", None)
    op = getattr(func, "_operation", None)
    if op is not None:
        return op
    return _by_class(registry.version()).get(func)


@functools.lru_cache(maxsize=None)
def _by_class(version: int) -> dict:
    out = {}
    for op in registry.operations():
        n = _node(op)
        if isinstance(n, type):
            out[n] = op
        if op.primitive and not op.sympy_diff:  # SymPy's own Abs (which SymPy's simplification may write) is abs too
            out.setdefault(op.sympy(sp), op)
    return out


def _value(op: Operation, value):
    """A declared derivative's value as SymPy: an expression, or a plain number (relu's kink side ``0``)."""
    if isinstance(value, sp.Basic):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return sp.Integer(value)
    if isinstance(value, float):
        return sp.Float(value)
    raise SeqgradTypeError(f"operation {op.name!r}: derivative", value, "a SymPy expression or a number")


def derivative(op: Operation, arg, out=None):
    """``phi'(arg)`` of ``op`` as SymPy, through ``out = phi(arg)`` where the declaration writes it so."""
    ns = sympy_namespace()
    if out is None:
        out = _node(op)(arg)
    if op.derivative is not None:
        return _value(op, op.derivative(ns, arg, out))
    u = sp.Dummy("u")
    return sp.diff(op.definition(ns, u), u).xreplace({u: arg})


def _build(op: Operation):
    ns_of = sympy_namespace
    if op.primitive:
        base = op.sympy(sp)
        if op.sympy_diff:
            return base

        def fdiff(self, argindex=1):
            return derivative(op, self.args[0], self)

        def _eval_derivative(self, x):  # SymPy's Abs differentiates through re/im parts: the chain rule, real
            return fdiff(self) * self.args[0].diff(x)

        def eval(cls, *args):  # SymPy's own eval builds its own class (Abs(2 z) -> 2 Abs(z)): keep ours
            value = base.eval(*args)
            if value is None:
                return None
            return value.replace(lambda e: type(e) is base, lambda e: cls(*e.args, evaluate=False))

        return type(base.__name__, (base,), {"fdiff": fdiff, "_eval_derivative": _eval_derivative, "_operation": op,
                                             "eval": classmethod(eval), "__module__": __name__})
    if op.inline:
        return lambda *args: op.definition(ns_of(), *args)

    lo, hi = op.arity

    def definition(*args):
        return op.definition(ns_of(), *args)

    class Op(sp.Function):
        nargs = lo if lo == hi else tuple(range(lo, hi + 1))
        _operation = op

        @classmethod
        def eval(cls, *args):
            if all(a.is_Number for a in args):
                return definition(*args)

        def fdiff(self, argindex=1):
            return derivative(op, self.args[0], self)

        def _eval_rewrite_as_exp(self, *args, **kwargs):
            return definition(*args)

        def _eval_rewrite_as_definition(self, *args, **kwargs):
            return definition(*args)

        def _eval_evalf(self, prec):
            return definition(*self.args)._eval_evalf(prec)

        def _eval_is_real(self):
            return self.args[0].is_real

        def _latex(self, printer, exp=None):
            base = r"%s\left(%s\right)" % (op.latex, ", ".join(printer._print(a) for a in self.args))
            return base if exp is None else r"%s^{%s}" % (base, exp)

    Op.__name__ = Op.__qualname__ = op.name
    return Op


# ---------------------------------------------------------------------------------------------------------
# a user's function through the same door


def evaluator(lam: sp.Lambda, argument: str = "definition") -> Callable:
    """A definition ``(m, *args) -> value`` that evaluates the SymPy Lambda ``lam`` over any namespace ``m``
    of the registry (SymPy: the Lambda itself; numpy, torch, mpmath: its tree, each operation by ``m``'s
    implementation, each number a float)."""
    variables = lam.variables
    body = lam.expr
    check_definition(body, variables, argument)

    def definition(m, *args):
        if isinstance(m, SympyNamespace):
            return lam(*args)
        return _evaluate(body, dict(zip(variables, args)), m, {})

    return definition


def _evaluate(e, env, m, memo):
    if e in env:
        return env[e]
    if e in memo:
        return memo[e]
    if e.is_number:
        value = float(e)
    elif e.is_Add:
        value = functools.reduce(operator.add, [_evaluate(a, env, m, memo) for a in e.args])
    elif e.is_Mul:
        value = functools.reduce(operator.mul, [_evaluate(a, env, m, memo) for a in e.args])
    elif e.is_Pow:
        exponent = int(e.exp) if e.exp.is_Integer else _evaluate(e.exp, env, m, memo)
        base = _evaluate(e.base, env, m, memo)
        value = m.sqrt(base) if e.exp == sp.S.Half else base ** exponent
    elif isinstance(e, (sp.Max, sp.Min)):
        fold = m.maximum if isinstance(e, sp.Max) else m.minimum
        value = functools.reduce(fold, [_evaluate(a, env, m, memo) for a in e.args])
    elif isinstance(e, sp.Heaviside):
        h0 = e.args[1] if len(e.args) > 1 else sp.S.Half
        value = m.heaviside(_evaluate(e.args[0], env, m, memo), float(h0))
    else:
        op = operation_of(e)
        value = getattr(m, op.name)(*[_evaluate(a, env, m, memo) for a in e.args])
    memo[e] = value
    return value


def check_definition(body, variables, argument: str) -> None:
    """Refuse a definition with a node the registry cannot evaluate numerically (one error naming it)."""
    if not isinstance(body, sp.Expr):
        raise SeqgradTypeError(argument, body, "a SymPy expression")
    for sub in sp.preorder_traversal(body):
        if sub.is_Symbol and sub not in variables:
            raise SeqgradValueError(argument, str(body), f"an expression of its argument(s) only (it reads {sub})")
        if sub.is_Atom or sub.is_Add or sub.is_Mul or sub.is_Pow or isinstance(sub, (sp.Max, sp.Min, sp.Heaviside)):
            continue
        if sub.is_number:
            continue
        op = operation_of(sub)
        if op is None or isinstance(sub, (sp.Derivative, sp.Integral)):
            raise SeqgradValueError(argument, str(body), f"operations of the registry only ({type(sub).__name__} is not "
                                    "one: " + ", ".join(registry.parser_names()) + ")")


def define(name: str, fn, *, derivative=None, argument: str | None = None):
    """The SymPy node of a user's function ``name``: ``fn`` is a ``sympy.Lambda``, a one-argument callable
    building a SymPy expression, or an :class:`~seqgrad.operations.Operation`; ``derivative`` (optional) is
    ``phi'`` as a Lambda of the argument (else SymPy's derivative of the definition, refused if SymPy
    cannot give one).  The node is an operation of its own (not registered: it belongs to its caller)."""
    argument = argument or f"functions[{name!r}]"
    if isinstance(fn, Operation):
        if fn.name != name:
            raise SeqgradValueError(argument, fn.name, f"an operation named {name!r}")
        return _node(fn)
    lam = _as_lambda(fn, argument)
    if len(lam.variables) != 1:
        raise SeqgradValueError(argument, str(lam), "a function of one argument")
    dlam = None if derivative is None else _as_lambda(derivative, f"{argument} derivative")
    return _define(name, lam, dlam, argument)


@functools.lru_cache(maxsize=256)
def _define(name: str, lam: sp.Lambda, dlam: sp.Lambda | None, argument: str):
    """One node per (name, definition, derivative): two cells with the same function share it."""
    definition = evaluator(lam, argument)
    deriv = None
    if dlam is not None:
        check_definition(dlam.expr, dlam.variables, f"{argument} derivative")
        deriv = lambda m, z, h: dlam(z)  # noqa: E731
    else:
        d = sp.diff(lam.expr, lam.variables[0])
        if d.has(sp.Derivative) or d.has(sp.Subs):
            raise SeqgradValueError(argument, str(lam), "a function SymPy can differentiate, or a derivative= of it "
                                    f"(its derivative came out as {d})")
    return _node(Operation(name, definition=definition, derivative=deriv))


def _as_lambda(fn, argument: str) -> sp.Lambda:
    if isinstance(fn, sp.Lambda):
        return fn
    if isinstance(fn, type) and issubclass(fn, sp.Function) or isinstance(fn, sp.FunctionClass):
        u = sp.Symbol("u")
        return sp.Lambda(u, fn(u))
    if not callable(fn):
        raise SeqgradTypeError(argument, fn, "a sympy.Lambda, a one-argument callable building a SymPy expression, "
                               "or a seqgrad.operations.Operation")
    u = sp.Symbol("u")
    try:
        value = fn(u)
    except Exception as exc:  # a user's callable: any failure is its definition's
        raise SeqgradTypeError(argument, fn, f"a one-argument callable building a SymPy expression (calling it on a "
                               f"symbol raised {type(exc).__name__}: {exc})") from None
    if not isinstance(value, sp.Expr):
        raise SeqgradTypeError(argument, value, "a callable that returns a SymPy expression (it returned a "
                               f"{type(value).__name__})")
    return sp.Lambda(u, value)


def inline_operation(expr):
    """``(op, argument)`` when ``expr`` is the definition of a one-argument inline operation of the registry
    (``Max(0, z)`` is ``relu(z)``, ``Max(z/100, z)`` is ``leaky_relu(z)``), else None."""
    if not isinstance(expr, sp.Basic) or expr.is_Atom:
        return None
    for op in registry.operations():
        if op.inline and op.arity == (1, 1) and op.name != "identity":
            w = sp.Wild("w")
            pattern = op.definition(sympy_namespace(), w)
            if type(pattern) is type(expr):
                found = expr.match(pattern)
                if found and w in found and found[w] != 0:
                    return op, found[w]
    return None


def diff(expr, x):
    """``sympy.diff(expr, x)``, except that an inline operation of the registry differentiates by its declared
    derivative: ``relu(z) = Max(0, z)`` has ``relu'(z) = Heaviside(z, 0)`` (``relu'(0) = 0``, as ``torch.relu``),
    where SymPy's rule for ``Max`` gives ``Heaviside(z)``, 1/2 at 0.  The derivative keeps the inline form."""
    opaque: dict = {}

    def hide(e):
        found = inline_operation(e)
        if found is None:
            return e
        op, arg = found
        cls = opaque.get(op.name)
        if cls is None:
            cls = opaque[op.name] = _node(dataclasses.replace(op, inline=False, builtin=False))
        return cls(arg)

    hidden = expr.replace(lambda e: isinstance(e, (sp.Max, sp.Min)), hide) if expr.has(sp.Max, sp.Min) else expr
    d = sp.diff(hidden, x)
    if not opaque:
        return d
    back = {cls: registry.get(name) for name, cls in opaque.items()}
    ns = sympy_namespace()
    return d.replace(lambda e: type(e) in back, lambda e: back[type(e)].definition(ns, *e.args))


def real_nodes(expr):
    """``expr`` with SymPy's own nodes of the operations whose SymPy derivative is not the real one (``Abs``,
    ``sign``, ``floor``) replaced by the registry's (a SymPy expression a user built with ``sympy.Abs``)."""
    swap = {}
    for op in registry.operations():
        if op.primitive and not op.sympy_diff:
            swap[op.sympy(sp)] = _node(op)
    return expr.replace(lambda e: type(e) in swap, lambda e: swap[type(e)](*e.args))


def __getattr__(name: str):
    """An operation's SymPy class by its class name, so derivations that hold one pickle (pickle finds a class
    as ``module.qualname``; the classes are built from the registry, not written in this module)."""
    for op in registry.operations():
        built = _node(op)
        if isinstance(built, type) and built.__qualname__ == name:
            return built
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def primitives(expr):
    """``expr`` with every composite operation replaced by its definition, down to the primitives: a definition may
    use other composites (``silu(z) = z*sigmoid(z)``), which one ``rewrite("definition")`` leaves standing.

    >>> import sympy as sp
    >>> z = sp.Symbol("z")
    >>> node("silu")(z).rewrite("definition"), primitives(node("silu")(z))
    (z*sigmoid(z), z/(1 + exp(-z)))
    """
    while True:
        rewritten = expr.rewrite("definition")
        if rewritten == expr:
            return expr
        expr = rewritten
