"""Fuzz of the operation registry through the cell engine (issue 24, "Done when"): random user cells --
scalar and vector, one to three states -- over every function the parser allows (a user's function, abs,
erf, square roots of constants and constants inside activations included), each derived, compiled on
numpy and on torch, and compared with the torch autograd twin (float64): loss and every gradient within
1e-10, and no crash.

The default run draws a fixed set of cells (seeded, so a failure is reproducible by its id); the slow
mark draws more."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from seqgrad import operations as registry
from seqgrad.crosscheck.cells import against_autograd
from seqgrad.derive.cell import Cell

TOLERANCE = 1e-10
u = sp.Symbol("u")
#: a user's own functions, through functions=
USER = {"mine": sp.Lambda(u, u * sp.erf(u) / sp.sqrt(2) + sp.sin(u) / 3),
        "bump": sp.Lambda(u, sp.exp(-u**2 / 2) * sp.cos(u))}
#: a function whose domain is not the whole line gets an argument inside it
DOMAIN = {"log": "log(2 + tanh({a}))", "sqrt": "sqrt(1 + ({a})**2)", "asin": "asin(tanh({a})/2)",
          "acos": "acos(sigmoid({a}))", "tan": "tan(tanh({a}))", "exp": "exp(tanh({a}))",
          "sinh": "sinh(tanh({a}))", "cosh": "cosh(tanh({a}))"}
#: functions of no slope: not composed over another (sign(tanh(softplus(z))) is the constant 1, no state)
FLAT = ("sign", "floor")
CONSTANTS = ("sqrt(2)", "pi/4", "erf(1/2)", "E/3", "sqrt(3)/2", "0.7", "exp(-1)", "abs(-0.3)", "log(2)", "gelu(1)")


def functions() -> list[str]:
    """Every function the parser allows (the registry's operations) and the user's."""
    return list(registry.parser_names()) + list(USER)


def _call(name: str, a: str) -> str:
    return DOMAIN[name].format(a=a) if name in DOMAIN else f"{name}({a})"


def _activation(rng, z: str, f: str | None = None) -> str:
    names = functions()
    c = CONSTANTS[rng.integers(len(CONSTANTS))]
    inner = [z, f"{c}*{z}", f"{z}/({c})", f"{z} + {c}"][rng.integers(4)]
    f = f or names[rng.integers(len(names))]
    shape = rng.integers(4)
    if shape == 0:
        return _call(f, inner)
    g = names[rng.integers(len(names))]
    if shape == 1:
        g = g if g not in FLAT else "tanh"
        return _call(g, f"tanh({_call(f, inner)})")  # a composition, bounded in between
    if shape == 2:
        return f"{_call(f, inner)}*{_call(g, z)}"
    return f"{_call(f, inner)} + {c}*{_call(g, z)}"


def random_equations(seed: int, vector: bool) -> tuple[str, list, dict]:
    """The equations' text, the states and the parameters of draw ``seed``; the first state's function
    is the ``seed``-th function (over the scalar and vector draws), so the default draw uses every one."""
    rng = np.random.default_rng(2 * seed + vector)
    names = functions()
    first = names[(2 * seed + vector) % len(names)]
    n = int(rng.integers(1, 4))
    states = ["h", "c", "m"][:n]
    lines, params = [], {}
    for i, s in enumerate(states):
        feed = states[i - 1] if i else states[-1]  # each state reads another's previous value (or its own)
        lines.append(f"z{i} = w_x{i}*x + w_h{i}*{s}_prev" + (f" + w_c{i}*{feed}_prev" if feed != s else "")
                     + (f" + b{i}" if vector else ""))
        act = _activation(rng, f"z{i}", first if i == 0 else None)
        carry = f" + 0.5*{s}_prev" if rng.integers(2) else ""
        lines.append(f"{s} = {act}{carry}")
        params.update({f"w_x{i}": ("H", "D"), f"w_h{i}": ("H", "H")})
        if feed != s:
            params[f"w_c{i}"] = ("H", "H")
        if vector:
            params[f"b{i}"] = ("H",)
    params["w_o"] = ("C", "H")
    return "; ".join(lines), states, params


def random_cell(seed: int, vector: bool) -> Cell:
    equations, states, params = random_equations(seed, vector)
    kw = dict(sizes={"D": 2, "H": 3, "C": 2}) if vector else {}
    return Cell(equations, states=states, params=params if vector else list(params), head=f"w_o*{states[0]}",
                functions=USER, name=f"fuzz{seed}", **kw)


def check(seed: int, vector: bool) -> None:
    cell = random_cell(seed, vector)
    for backend in ("numpy", "torch"):
        rows = against_autograd(cell, steps=(1, 4), trials=1, seed=seed, backend=backend)
        bad = [r for r in rows if not (r[2] < TOLERANCE or r[3] < TOLERANCE)]
        assert not bad, (cell, backend, bad)
        assert {r[1] for r in rows} >= {"L", "X", *cell.parameter_names}


DEFAULT = range((len(functions()) + 1) // 2)  # a scalar and a vector cell each: every function at least once


def test_the_default_draw_covers_every_function_the_parser_allows():
    text = " ".join(random_equations(seed, vector)[0] for seed in DEFAULT for vector in (False, True))
    missing = [name for name in functions() if f"{name}(" not in text]
    assert not missing and len(DEFAULT) * 2 >= len(functions())


@pytest.mark.parametrize("seed", DEFAULT)
@pytest.mark.parametrize("vector", [False, True], ids=["scalar", "vector"])
def test_random_cells_match_autograd_on_numpy_and_torch(seed, vector):
    check(seed, vector)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(100, 160))
@pytest.mark.parametrize("vector", [False, True], ids=["scalar", "vector"])
def test_more_random_cells_match_autograd(seed, vector):
    check(seed, vector)
