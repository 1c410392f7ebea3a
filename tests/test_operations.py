"""The operation registry (issue 24): one declaration per scalar operation, read by the parser, the
printers, the tape, the compiled code and the autograd twin; a user's operation through the same door;
bad input refused in one line."""

from __future__ import annotations

import math
import re

import mpmath
import numpy as np
import pytest
import sympy as sp
import torch

from seqgrad import operations as registry
from seqgrad.crosscheck.cells import CellFunction, against_autograd
from seqgrad.crosscheck.lambdify import lambdify
from seqgrad.derive import operations, rnn
from seqgrad.derive.cell import Cell, CellError
from seqgrad.derive.safe_parse import parse_expression
from seqgrad.derive.tape import mpmath_function
from seqgrad.errors import ParseError, SeqgradError, SeqgradTypeError, SeqgradValueError
from seqgrad.numeric.activations import namespace

z = sp.Symbol("z", real=True)
POINTS = (-1.7, -0.45, 0.3, 0.8, 2.2)  # away from every kink (0, the integers)
DOMAIN = {"log": (0.3, 0.8, 2.2), "sqrt": (0.3, 0.8, 2.2), "asin": (-0.45, 0.3, 0.8), "acos": (-0.45, 0.3, 0.8)}


def scalar_cell(f: str, **kw) -> Cell:
    return Cell(f"z = w_x*x + w_h*h_prev; h = {f}", states="h", params="w_x w_h w_o", head="w_o*h", **kw)


def vector_cell(f: str, **kw) -> Cell:
    return Cell(f"z = w_x*x + w_h*h_prev + b; h = {f}", states="h", sizes={"D": 2, "H": 3, "C": 1},
                params={"w_x": ("H", "D"), "w_h": ("H", "H"), "b": ("H",), "w_o": ("C", "H")}, head="w_o*h", **kw)


def worst(rows) -> float:
    return max(r[2] for r in rows)


# --------------------------------------------------------------------------- every declaration is right

@pytest.mark.parametrize("op", registry.operations(), ids=lambda op: op.name)
def test_declared_derivative_is_sympys_derivative_and_every_backend_agrees(op):
    """The proof of each declaration: phi' as declared equals SymPy's derivative of the node (of the
    definition, for an operation with one) at points off the kinks, to 30 digits; numpy, torch and mpmath
    give SymPy's value."""
    node = operations.node(op.name)
    u = sp.Dummy("u", real=True)
    phi = node(u)
    declared = operations.derivative(op, u, phi)
    reference = sp.diff(op.definition(operations.sympy_namespace(), u) if op.definition else
                        (op.sympy(sp)(u) if op.sympy_diff else phi), u)
    if not op.sympy_diff:  # SymPy's own derivative of |u|, sign, floor on a real symbol
        reference = sp.diff(op.sympy(sp)(u), u)
    ns_np, ns_torch, ns_mp = namespace("numpy"), namespace("torch"), operations.mpmath_namespace()
    for x in DOMAIN.get(op.name, POINTS):
        at = {u: sp.Float(x, 30)}
        if reference.has(sp.Derivative):  # SymPy has none (floor, sign): a central difference off the kinks
            with mpmath.workdps(40):
                f = getattr(ns_mp, op.name)
                want = sp.Float((f(mpmath.mpf(x) + mpmath.mpf("1e-12")) - f(mpmath.mpf(x) - mpmath.mpf("1e-12"))) / 2e-12, 30)
        else:
            want = sp.N(reference.subs(at).doit(), 30)
        got = sp.N(declared.subs(at).doit(), 30)
        assert abs(complex(got - want)) < 1e-25, (op.name, x, got, want)
        value = float(sp.N(phi.subs(at), 30))
        assert abs(float(getattr(ns_np, op.name)(np.array([x]))[0]) - value) < 1e-13, op.name
        t = getattr(ns_torch, op.name)(torch.tensor([x], dtype=torch.float64))
        assert abs(float(t[0]) - value) < 1e-13, op.name
        with mpmath.workdps(30):
            assert abs(float(getattr(ns_mp, op.name)(mpmath.mpf(x))) - value) < 1e-13, op.name


def test_the_tables_read_the_registry():
    """The parser, rnn.unroll, Cell and the claims whitelist take their names from the registry."""
    from seqgrad.derive import activations, whitelist

    names = set(registry.parser_names())
    assert {"gelu", "softplus", "erf", "abs", "relu", "sigmoid"} <= names
    assert set(activations.names()) == set(registry.activation_names()) | {"phi"}
    assert set(whitelist.FUNCTION_ARITY) == set(registry.claims_names()) == names  # every operation, erf included
    for name in registry.activation_names():  # rnn.unroll and Cell accept the same names
        rnn.unroll(steps=1, activation=name)
        scalar_cell(f"{name}(z)")


def test_softplus_is_accepted_by_rnn_unroll_as_by_cell():
    net = rnn.unroll(steps=2, activation="softplus")
    assert "log(1 + exp(z_1))" in str(net)


def test_gelu_derives_prints_and_compiles_on_both_backends():
    cell = scalar_cell("gelu(z)")
    gen = cell.general()
    assert "h_t = gelu(z_t)" in [str(r) for r in gen.forward_rows()]
    assert str(gen.backward_rows()[-1]) == ("g_t^z = g_t^h*(1/2 + erf(z_t*sqrt(2)/2)/2 + "
                                            "z_t*exp(-z_t**2/2)*sqrt(2)/(2*sqrt(pi)))")
    assert r"\operatorname{GELU}(z_{t})" in gen.latex()
    for backend in ("numpy", "torch"):
        assert worst(against_autograd(cell, backend=backend)) < 1e-10
        assert worst(against_autograd(vector_cell("gelu(z)"), backend=backend)) < 1e-10


def test_a_user_gelu_lambda_runs_on_numpy_and_torch():
    """Issue 24: ``Lambda(u, u*(1+erf(u/sqrt(2)))/2)`` derived and printed, then numpy failed (math.erf) and
    torch failed (torch.sqrt(2) on an int)."""
    u = sp.Symbol("u")
    mine = {"mygelu": sp.Lambda(u, u * (1 + sp.erf(u / sp.sqrt(2))) / 2)}
    for make in (scalar_cell, vector_cell):
        cell = make("mygelu(z)", functions=mine)
        assert "mygelu" in str(cell.general().backward_rows()) or "erf" in str(cell.general().backward_rows())
        for backend in ("numpy", "torch"):
            assert worst(against_autograd(cell, backend=backend)) < 1e-10


def test_constants_inside_an_activation_compile_on_torch():
    """``h = relu(z/sqrt(2))`` crashed the torch loop with a raw TypeError."""
    for f in ("relu(z/sqrt(2))", "tanh(sqrt(2)*z + erf(1/2))", "sigmoid(pi*z)"):
        for make in (scalar_cell, vector_cell):
            for backend in ("numpy", "torch"):
                assert worst(against_autograd(make(f), backend=backend)) < 1e-10, (f, backend)


@pytest.mark.parametrize("f", ["abs(z)", "floor(z) + z", "sign(z)*z"])
def test_abs_floor_sign_have_real_derivatives(f):
    """Never ``Derivative(re(w), w)``: abs' = sign (sign(0) = 0, as torch.abs), floor' = sign' = 0."""
    cell = scalar_cell(f)
    rows = " ".join(str(r) for r in cell.general().backward_rows())
    assert "re(" not in rows and "im(" not in rows and "Derivative" not in rows
    assert worst(against_autograd(cell, backend="numpy")) < 1e-10
    assert worst(against_autograd(vector_cell(f), backend="torch")) < 1e-10


def test_abs_built_with_sympy_abs_gets_the_real_derivative():
    w_x, w_h, x, h_prev, w_o = sp.symbols("w_x w_h x h_prev w_o")
    cell = Cell([("z", w_x * x + w_h * h_prev), ("h", sp.Abs(sp.Symbol("z")))], states="h", params="w_x w_h w_o",
                head="w_o*h")
    assert "re(" not in str(cell.general().backward_rows())
    assert worst(against_autograd(cell)) < 1e-10


# --------------------------------------------------------------------------- an operation of your own

def test_an_operation_registered_in_this_file_alone():
    """Registered here only: derivation, LaTeX, numpy, torch, the autograd check, the parser, rnn.unroll."""
    softsign = registry.Operation(
        "softsign", sympy=None, definition=lambda m, z: z / (1 + m.abs(z)),
        derivative=lambda m, z, h: 1 / (1 + m.abs(z)) ** 2, latex=r"\operatorname{softsign}", gamma=1.0)
    registry.register(softsign)
    try:
        assert parse_expression("softsign(1)") == sp.Rational(1, 2)                      # the parser
        cell = scalar_cell("softsign(z)")
        row = str(cell.general().backward_rows()[-1])
        assert "(Abs(z_t) + 1)**2" in row.replace("(1 + Abs(z_t))", "(Abs(z_t) + 1)")   # the derivation
        assert r"\operatorname{softsign}(z_{t})" in cell.general().latex()    # LaTeX
        for backend in ("numpy", "torch"):                                               # numpy, torch, autograd
            assert worst(against_autograd(cell, backend=backend)) < 1e-10
            assert worst(against_autograd(vector_cell("softsign(z)"), backend=backend)) < 1e-10
        assert "softsign" in str(rnn.unroll(steps=2, activation="softsign"))             # rnn.unroll
        f = mpmath_function([z], operations.node("softsign")(z))                         # the tape
        assert abs(float(f(mpmath.mpf(3))) - 0.75) < 1e-15
    finally:
        registry.unregister("softsign")
    with pytest.raises(ParseError, match="softsign"):
        parse_expression("softsign(1)")


def test_a_primitive_registered_with_its_implementations():
    op = registry.Operation("cube_root", sympy=lambda s: lambda x: sp.sign(x) * sp.Abs(x) ** sp.Rational(1, 3),
                            numpy=lambda np_: np_.cbrt, torch=lambda t: lambda v: t.sign(v) * t.abs(v) ** (1 / 3),
                            mpmath=lambda mp: mp.cbrt, derivative=lambda m, z, h: 1 / (3 * h**2))
    registry.register(op)
    try:
        assert np.allclose(namespace("numpy").cube_root(np.array([8.0, -27.0])), [2.0, -3.0])
    finally:
        registry.unregister("cube_root")


# --------------------------------------------------------------------------- bad input

def test_a_primitive_without_a_derivative_is_refused():
    with pytest.raises(SeqgradValueError, match="derivative"):
        registry.Operation("mystery", sympy=lambda s: s.tanh, numpy=lambda n: n.tanh)


def test_a_builtin_operation_cannot_be_replaced_or_removed():
    with pytest.raises(SeqgradValueError, match="tanh"):
        registry.register(registry.Operation("tanh", definition=lambda m, z: z), replace=True)
    with pytest.raises(SeqgradValueError, match="name"):
        registry.unregister("tanh")


@pytest.mark.parametrize("fn, words", [
    (lambda z: 3.0, "returns a SymPy expression"),
    (lambda z: "z", "returns a SymPy expression"),
    (lambda a, b: a, "one-argument callable"),
    (42, "sympy.Lambda"),
])
def test_a_user_function_that_is_not_a_sympy_function_is_refused(fn, words):
    with pytest.raises(SeqgradError, match=words) as info:
        scalar_cell("f(z)", functions={"f": fn})
    assert "functions" in str(info.value)


def test_a_user_function_sympy_cannot_differentiate_is_refused_by_name():
    u = sp.Symbol("u")
    with pytest.raises(SeqgradValueError, match=r"functions\['f'\]"):
        scalar_cell("f(z)", functions={"f": sp.Lambda(u, sp.Function("q")(u))})


@pytest.mark.parametrize("kwargs, argument, words", [
    (dict(params="x w_h w_o", equations="z = x*x + w_h*h_prev; h = tanh(z)"), "params", "the input"),
    (dict(params="w_x w_x w_h w_o"), "params", "once"),
    (dict(states="h h"), "states", "once"),
    (dict(states="x", equations="z = w_x*x + w_h*x_prev; x = tanh(z)", head="w_o*x"), "states", "input"),
    (dict(functions={"tanh": sp.Lambda(sp.Symbol("u"), sp.Symbol("u"))}), "functions", "already an operation"),
    (dict(functions={"h": sp.Lambda(sp.Symbol("u"), sp.Symbol("u"))}), "functions", "variable"),
])
def test_names_that_collide_are_refused_by_name(kwargs, argument, words):
    spec = dict(equations="z = w_x*x + w_h*h_prev; h = tanh(z)", states="h", params="w_x w_h w_o", head="w_o*h")
    spec.update(kwargs)
    with pytest.raises(CellError, match=words) as info:
        Cell(spec.pop("equations"), **spec)
    assert info.value.argument == argument


def test_a_state_named_g_is_legal():
    """``g`` (UGRNN, torch's LSTM gate naming) crashed with 'Symbol' object has no attribute 'partition'."""
    cell = Cell("z = w_x*x + w_h*g_prev; g = tanh(z)", states="g", params="w_x w_h w_o", head="w_o*g")
    assert str(cell.general().grad("w_h")) == "Sum_{t=0}^{T-1} g_t^z*g_{t-1}"
    assert worst(against_autograd(cell)) < 1e-10


@pytest.mark.parametrize("name", ["e", "L", "t", "T", "yhat"])
def test_a_state_with_an_engine_name_is_refused_naming_it(name):
    with pytest.raises(CellError, match=f"states='{name}'"):
        Cell(f"z = w_x*x + w_h*{name}_prev; {name} = tanh(z)", states=name, params="w_x w_h w_o", head=f"w_o*{name}")


def test_the_torch_printer_refuses_an_unknown_function_when_compiling():
    x = sp.Symbol("x")
    for f in (sp.Function("q")(x), sp.besselj(0, x)):
        for backend in ("numpy", "torch"):
            with pytest.raises(SeqgradValueError, match="registry"):
                lambdify(None, [f], [x], backend=backend)


def test_an_operation_without_a_torch_implementation_is_refused_naming_it():
    op = registry.Operation("np_only", sympy=lambda s: sp.Function("np_only"), numpy=lambda n: n.tanh,
                            derivative=lambda m, z, h: 1 - h**2)
    registry.register(op)
    try:
        x = sp.Symbol("x")
        node = operations.node("np_only")
        lambdify(None, [node(x)], [x], backend="numpy")
        with pytest.raises(SeqgradValueError, match="np_only.*torch|torch.*np_only"):
            lambdify(None, [node(x)], [x], backend="torch")
    finally:
        registry.unregister("np_only")


def test_gelu_is_one_definition():
    """Issue 24's count: GELU is declared at one site (seqgrad/operations.py) and nowhere else."""
    import pathlib

    root = pathlib.Path(registry.__file__).resolve().parent.parent
    declares = re.compile(r"name=\"gelu\"|def gelu|\bgelu\s*=|class gelu|erf\(z / m\.sqrt\(2\)\)", re.I)
    sites = [p.relative_to(root).as_posix() for folder in ("seqgrad", "derive", "numeric", "crosscheck")
             for p in (root / folder).rglob("*.py") if declares.search(p.read_text())]
    assert sites == ["seqgrad/operations.py"], sites
    assert math.isclose(float(namespace("numpy").gelu(1.0)), 0.5 * (1 + math.erf(1 / math.sqrt(2))))
