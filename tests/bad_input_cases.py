"""Every bad input seqgrad refuses, in ONE place.

Each :class:`Case` names the area, the call as a user would write it, a
callable that makes the call, the exception class it must raise and a
fragment of the message.  ``tests/test_bad_input_table.py`` runs every case,
and ``python tests/bad_input_cases.py`` renders ``docs/bad-input.md`` from
this list (a test checks that the committed page is up to date).

CLI cases (area ``cli``) hold the argument list; they run in-process through
the parser and the command's handler (raising what ``seqgrad`` turns into its
one-line message) and, in a separate test, as a real ``seqgrad`` process whose
standard error must be one line with no traceback.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "tests") not in sys.path:  # so that ``python tests/bad_input_cases.py`` finds injection_targets
    sys.path.insert(0, str(ROOT / "tests"))

from seqgrad.errors import (  # noqa: E402
    NonFiniteError,
    ParseError,
    SeqgradError,
    SeqgradTypeError,
    SeqgradValueError,
    ShapeError,
    SizeGuardError,
    UndefinedError,
)

#: the text that must never run (it would create a file if it did)
PAYLOAD = "__import__('os').system('touch pwned')"


@dataclass(frozen=True)
class Case:
    area: str
    call: str
    run: Callable[[], object] = field(compare=False, repr=False)
    error: type
    fragment: str
    argv: tuple[str, ...] | None = None  # CLI cases only


class UsageError(SeqgradError):
    """Stands for the CLI's argparse refusals in this table (``crosscheck.cli.UsageError``)."""


def _cli(argv: list[str]) -> Callable[[], object]:
    def run():
        from seqgrad.crosscheck import cli

        try:
            args = cli.build_parser().parse_args(argv)
        except cli.UsageError as exc:
            raise UsageError(str(exc)) from None
        return args.handler(args)

    return run


CASES: list[Case] = []


def case(area: str, call: str, error: type, fragment: str):
    """Register ``run`` (a zero-argument callable) as the case ``call``."""

    def add(run):
        CASES.append(Case(area, call, run, error, fragment))
        return run

    return add


def cli(argv: list[str], error: type, fragment: str) -> None:
    CASES.append(Case("cli", "seqgrad " + " ".join(argv), _cli(argv), error, fragment, tuple(argv)))


# ---------------------------------------------------------------- derive: recurrent networks

def _rnn():
    from seqgrad.derive import rnn

    return rnn


case("derive.rnn", "rnn.unroll(steps=0)", SeqgradValueError, "steps=0")(lambda: _rnn().unroll(steps=0))
case("derive.rnn", "rnn.unroll(steps=2.5)", SeqgradTypeError, "an integer")(lambda: _rnn().unroll(steps=2.5))
case("derive.rnn", "rnn.unroll(3, activation='swish')", SeqgradValueError, "one of identity, tanh")(
    lambda: _rnn().unroll(3, activation="swish"))
case("derive.rnn", "rnn.unroll(3, hidden=0)", SeqgradValueError, "hidden=0")(lambda: _rnn().unroll(3, hidden=0))
case("derive.rnn", "rnn.unroll(3, loss='median')", SeqgradValueError, "loss")(lambda: _rnn().unroll(3, loss="median"))
case("derive.rnn", "rnn.unroll(3).grad('w_q')", SeqgradValueError, "w_q")(lambda: _rnn().unroll(3).grad("w_q"))
case("derive.rnn", "rnn.unroll(40).grad('w_h', expand=True, max_terms=1000)", SizeGuardError, "size guard")(
    lambda: _rnn().unroll(40).grad("w_h", expand=True, max_terms=1000))
def _user_cell(**kw):
    from seqgrad.derive.cell import Cell

    spec = dict(equations="z = w_x*x + w_h*h_prev; h = tanh(z)", states="h", params="w_x w_h w_o", head="w_o*h")
    spec.update(kw)
    return Cell(**spec)


case("derive.cell", "Cell(..., states='c')  (a state no equation defines)", SeqgradValueError, "states")(
    lambda: _user_cell(states="c"))
case("derive.cell", "Cell('z = w_x*x + q; ...')  (an unknown name)", SeqgradValueError, "'q'")(
    lambda: _user_cell(equations="z = w_x*x + q; h = tanh(z)"))
case("derive.cell", "Cell(..., params='w_x w_h w_o w_q')  (a parameter the loss never reaches)", SeqgradValueError,
     "gradient would be zero")(lambda: _user_cell(params="w_x w_h w_o w_q"))
case("derive.cell", "Cell('... h_prev_prev ...')  (an order-2 recurrence)", SeqgradValueError, "first-order")(
    lambda: _user_cell(equations="z = w_x*x + w_h*h_prev_prev; h = tanh(z)"))
case("derive.cell", "Cell(..., sizes={'D': 3, 'H': 4, 'C': 2}) with w_h*x  (shape mismatch)", SeqgradValueError,
     "1 x 3")(lambda: _user_cell(params={"w_x": ("H", "D"), "w_h": ("H", "H"), "w_o": ("C", "H")}, sizes={"D": 3, "H": 4, "C": 2},
                             equations="z = w_h*x; h = tanh(z + w_x*x)"))
case("derive.cell", "Cell(..., loss='hinge')", SeqgradValueError, "loss")(lambda: _user_cell(loss="hinge"))
case("derive.cell", "Cell(..., on=[])", SeqgradValueError, "on")(lambda: _user_cell(on=[]))
case("derive.cell", "Cell('... e_prev ...', states='e')  (a state named like the engine's error)", SeqgradValueError,
     "the derivation's own name for the error")(
    lambda: _user_cell(equations="z = w_x*x + w_h*e_prev; e = tanh(z)", states="e", head="w_o*e"))
case("derive.cell", "Cell(...).unroll(0)", SeqgradValueError, "steps=0")(lambda: _user_cell().unroll(0))
case("derive.cell", "CellFunction(Cell(..., 'phi'))  (a generic activation has no numeric value)", SeqgradValueError,
     "concrete activation")(lambda: __import__("seqgrad.crosscheck.cells").crosscheck.cells.CellFunction(
         _user_cell(equations="z = w_x*x + w_h*h_prev; h = phi(z)")))
case("derive.cell", "Cell(..., functions={'f': lambda z: 3.0})  (a function that returns no SymPy expression)",
     SeqgradTypeError, "functions['f']")(lambda: _user_cell(equations="z = w_x*x + w_h*h_prev; h = f(z)",
                                                            functions={"f": lambda z: 3.0}))
case("derive.cell", "Cell(..., functions={'tanh': ...})  (a function named like an operation)", SeqgradValueError,
     "already an operation")(lambda: _user_cell(functions={"tanh": lambda z: z}))
case("derive.cell", "Cell('z = x*x + ...', params='x w_h w_o')  (a parameter named like the input)", SeqgradValueError,
     "'x' is the input")(lambda: _user_cell(equations="z = x*x + w_h*h_prev; h = tanh(z)", params="x w_h w_o"))
case("derive.cell", "Cell(..., params='w_x w_x w_h w_o')  (a parameter named twice)", SeqgradValueError,
     "each parameter named once")(lambda: _user_cell(params="w_x w_x w_h w_o"))
case("derive.cell", "Cell(..., states='h h')  (a state named twice)", SeqgradValueError, "each name once")(
    lambda: _user_cell(states="h h"))
case("derive.cell", "Cell('...; yhat = tanh(z)', states='yhat')  (a name the derivation uses)", SeqgradValueError,
     "states='yhat'")(lambda: _user_cell(equations="z = w_x*x + w_h*yhat_prev; yhat = tanh(z)", states="yhat",
                                        head="w_o*yhat"))
case("operations", "Operation('mystery', sympy=lambda sp: sp.tanh)  (a primitive without a derivative)",
     SeqgradValueError, "derivative")(
    lambda: __import__("seqgrad.operations").operations.Operation("mystery", sympy=lambda sp: sp.tanh))
case("operations", "lambdify(None, [besselj(0, x)], [x], 'torch')  (a function that is not an operation)",
     SeqgradValueError, "registry")(lambda: _lambdify_unknown())


def _lambdify_unknown():
    import sympy as sp

    from seqgrad.crosscheck.lambdify import lambdify

    x = sp.Symbol("x")
    return lambdify(None, [sp.besselj(0, x)], [x], backend="torch")


case("operations", "CellFunction(cell, 'torch'), cell applying npsin, registered with a numpy implementation only",
     SeqgradValueError, "torch implementation")(lambda: _numpy_only_for_torch())


def _numpy_only_for_torch():
    """Refused when the loop is compiled, before any call: the operation and the backend named."""
    from seqgrad import operations as registry
    from seqgrad.crosscheck.cells import CellFunction
    from seqgrad.derive.cell import Cell

    registry.register(registry.Operation("npsin", sympy=lambda s: s.sin, numpy=lambda n: n.sin, sympy_diff=False,
                                         derivative=lambda m, z, h: m.cos(z)))
    try:
        cell = Cell("z = w_x*x + w_h*h_prev; h = npsin(z)", states="h", params="w_x w_h w_o", head="w_o*h")
        return CellFunction(cell, "torch")
    finally:
        registry.unregister("npsin")


case("derive.cell", "RNNFunction('x')", SeqgradTypeError, "unrolled network")(
    lambda: __import__("seqgrad.crosscheck.cells").crosscheck.cells.RNNFunction("x"))
case("derive.gated", "gated.gru(steps=0)", SeqgradValueError, "steps=0")(
    lambda: __import__("seqgrad.derive.gated").derive.gated.gru(steps=0))
case("derive.gated", "gated.lstm(3, hidden=1.5)", SeqgradTypeError, "an integer")(
    lambda: __import__("seqgrad.derive.gated").derive.gated.lstm(3, hidden=1.5))

# ---------------------------------------------------------------- derive: Transformer identities


def _positional():
    from seqgrad.derive import positional

    return positional


def _attention():
    from seqgrad.derive import attention

    return attention


case("derive.positional", "Sinusoidal(d=0)", SeqgradValueError, "d=0")(lambda: _positional().Sinusoidal(0))
case("derive.positional", "Sinusoidal(5).rotation_block(4)  (the unpaired sine of odd d)", SeqgradValueError,
     "unpaired")(lambda: _positional().Sinusoidal(5).rotation_block(4))
case("derive.positional", "Sinusoidal(8, base=1)", SeqgradValueError, "> 1")(lambda: _positional().Sinusoidal(8, base=1))
case("derive.attention", "attention.head_widths(5, 2)  (heads that do not fit)", SeqgradValueError, "heads")(
    lambda: _attention().head_widths(5, 2))
case("derive.attention", "SelfAttention(3, 2, 2, mask=causal_mask(2))  (wrong-shape mask)", ShapeError, "3 x 3")(
    lambda: _attention().SelfAttention(3, 2, 2, mask=_attention().causal_mask(2)))
case("derive.attention", "SelfAttention(2, 2, 2, mask=[[0, 0], [-oo, -oo]])  (a row with every source masked)",
     SeqgradValueError, "every row")(
    lambda: _attention().SelfAttention(2, 2, 2, mask=[[0, 0], [_attention().NEG_INF, _attention().NEG_INF]]))
case("derive.attention", "SelfAttention(2, 2, 2, W_Q=[[1, 2, 3]])  (shape mismatch)", ShapeError, "2 x 2")(
    lambda: _attention().SelfAttention(2, 2, 2, W_Q=[[1, 2, 3]]))
case("derive.attention", "SelfAttention(0, 2, 2)", SeqgradValueError, "T=0")(lambda: _attention().SelfAttention(0, 2, 2))
case("derive.layernorm", "LayerNorm(3, eps=0)", SeqgradValueError, "eps=0")(
    lambda: __import__("seqgrad.derive.layernorm").derive.layernorm.LayerNorm(3, eps=0))
case("derive.layernorm", "LayerNorm(3, eps=-1e-5)", SeqgradValueError, "eps")(
    lambda: __import__("seqgrad.derive.layernorm").derive.layernorm.LayerNorm(3, eps=-1e-5))
case("derive.layernorm", "LayerNorm(3, eps=float('nan'))", NonFiniteError, "finite")(
    lambda: __import__("seqgrad.derive.layernorm").derive.layernorm.LayerNorm(3, eps=math.nan))
case("derive.layernorm", "LayerNorm(3, h=[1, 2])  (mismatched widths)", SeqgradValueError, "d=3")(
    lambda: __import__("seqgrad.derive.layernorm").derive.layernorm.LayerNorm(3, h=[1, 2]))
case("derive.blocks", "block_program('pre-norm', norm='batchnorm')  (an unknown normalisation)", SeqgradValueError,
     "one of 'layernorm', 'rmsnorm', or a derive.blocks.Norm")(
    lambda: __import__("seqgrad.derive.blocks").derive.blocks.block_program("pre-norm", norm="batchnorm"))
case("derive.blocks", "norm_program(norm=None)", SeqgradValueError, "norm=None")(
    lambda: __import__("seqgrad.derive.blocks").derive.blocks.norm_program(None))
case("derive.softmax", "softmax.softmax([])", SeqgradValueError, "at least one")(
    lambda: __import__("seqgrad.derive.softmax").derive.softmax.softmax([]))
case("derive.softmax", "softmax.softmax([1.0, float('inf')])", NonFiniteError, "finite")(
    lambda: __import__("seqgrad.derive.softmax").derive.softmax.softmax([1.0, math.inf]))
case("derive.residual", "residual.DepthProduct(L=0)", SeqgradValueError, "L=0")(
    lambda: __import__("seqgrad.derive.residual").derive.residual.DepthProduct(L=0))
case("derive.counting", "counting.attention_params(d_model=0)", SeqgradValueError, "d_model=0")(
    lambda: __import__("seqgrad.derive.counting").derive.counting.attention_params(d_model=0))
case("derive.counting", "counting.attention_params(d_model=5, heads=2)  (heads that do not fit)", SeqgradValueError,
     "divide")(lambda: __import__("seqgrad.derive.counting").derive.counting.attention_params(d_model=5, heads=2))
case("derive.catalogue", "catalogue.get('no-such-identity')", SeqgradValueError, "catalogue entry")(
    lambda: __import__("seqgrad.derive.catalogue").derive.catalogue.get("no-such-identity"))

# ---------------------------------------------------------------- derive: text (claims, expressions)


def _claims():
    from seqgrad.derive import claims

    return claims


case("derive.claims", "parse_claim('1 +* 2 = 3')  (unparsable claim)", ParseError, "claim")(
    lambda: _claims().parse_claim("1 +* 2 = 3"))
case("derive.claims", "parse_claim('sin(1) = ')  (no printed value)", ParseError, "printed=''")(
    lambda: _claims().parse_claim("sin(1) = "))
case("derive.claims", "parse_claim('x = 1')  (unknown name)", ParseError, "'x' is not on the whitelist")(
    lambda: _claims().parse_claim("x = 1"))
case("derive.claims", "parse_claim('9**9**9**9 = 1')  (size limit)", ParseError, "exponent")(
    lambda: _claims().parse_claim("9**9**9**9 = 1"))
case("derive.claims", "parse_claim('1/(sin(pi/7)**2 + cos(pi/7)**2 - 1) = 0')  (division by an exact zero)", UndefinedError,
     "division by zero")(lambda: _claims().parse_claim("1/(sin(pi/7)**2 + cos(pi/7)**2 - 1) = 0").verify())
case("derive.claims", "parse_claim('log(2, 0) = 0')  (undefined logarithm)", UndefinedError, "log() to the base '0'")(
    lambda: _claims().parse_claim("log(2, 0) = 0"))
case("derive.claims", "parse_claim('floor(exp(5000)) = 1')  (overflow)", ParseError, "magnitude limit")(
    lambda: _claims().parse_claim("floor(exp(5000)) = 1"))
case("derive.claims", "parse_claim('1 = 1e400')  (a printed number out of range)", ParseError, "decimal exponent")(
    lambda: _claims().parse_claim("1 = 1e400"))
case("derive.claims", "parse_claim('1 # + 1 = 1')  (a comment character)", ParseError, "'#'")(
    lambda: _claims().parse_claim("1 # + 1 = 1"))
case("derive.claims", "parse_claim('softmax(-inf, -inf) = (0, 0)')  (every score masked)", UndefinedError, "all -inf")(
    lambda: _claims().parse_claim("softmax(-inf, -inf) = (0, 0)"))


def _verify(*args, **kwargs):
    from seqgrad.derive.verification import verify

    return verify(*args, **kwargs)


case("derive.verify", "verify('sin(x) = y', variables='x')  (undeclared name)", ParseError, "'y' is not on the whitelist")(
    lambda: _verify("sin(x) = y", variables="x"))
case("derive.verify", "verify('x + 1', variables='x')  (no '=')", ParseError, '"LHS = RHS"')(
    lambda: _verify("x + 1", variables="x"))
case("derive.verify", "verify(Symbol('m'), 1, sizes='m')  (a size that is not a positive integer symbol)", SeqgradValueError,
     "positive integer symbol")(lambda: _verify(__import__("sympy").Symbol("m"), 1, sizes="m"))
case("derive.verify", "verify('x = x', variables='x', time_limit=0)", SeqgradValueError, "time_limit")(
    lambda: _verify("x = x", variables="x", time_limit=0))
case("derive.verify", f"verify({PAYLOAD!r} + ' = 0')  (injection)", ParseError, "not allowed")(
    lambda: _verify(PAYLOAD + " = 0"))
case("derive.safe_parse", f"parse_expression({PAYLOAD!r})  (injection payload)", ParseError, "attribute access")(
    lambda: __import__("seqgrad.derive.safe_parse").derive.safe_parse.parse_expression(PAYLOAD))
case("derive.safe_parse", "parse_expression('exec(\"1\")')", ParseError, "exec")(
    lambda: __import__("seqgrad.derive.safe_parse").derive.safe_parse.parse_expression('exec("1")'))
case("derive.softmax", f"softmax.jacobian_closed_form([{PAYLOAD!r}])  (injection payload)", ParseError,
     "attribute access")(lambda: __import__("seqgrad.derive.softmax").derive.softmax.jacobian_closed_form([PAYLOAD]))
case("derive.layernorm", f"LayerNorm(2, eps={PAYLOAD!r})  (injection payload)", ParseError, "attribute access")(
    lambda: __import__("seqgrad.derive.layernorm").derive.layernorm.LayerNorm(2, eps=PAYLOAD))
case("derive.positional", f"Sinusoidal(4).vector({PAYLOAD!r})  (injection payload)", ParseError, "attribute access")(
    lambda: _positional().Sinusoidal(4).vector(PAYLOAD))
case("derive.program", f"Program().define(Symbol('a'), {PAYLOAD!r})  (injection payload)", ParseError,
     "attribute access")(lambda: __import__("seqgrad.derive.program").derive.program.Program().define(
         __import__("sympy").Symbol("a"), PAYLOAD))

# ---------------------------------------------------------------- numeric


def _np():
    import numpy as np

    return np


def _torch():
    import torch

    return torch


case("numeric.recurrent", "Params(W_x=ones(2,3), W_h=ones(3,3), W_o=ones(1,2))  (mismatched widths)", ShapeError,
     "W_h")(lambda: __import__("seqgrad.numeric.recurrent").numeric.recurrent.Params(_np().ones((2, 3)), _np().ones((3, 3)),
                                                                        _np().ones((1, 2))))
case("numeric.recurrent", "Params(W_x=[[nan]], W_h=[[1]], W_o=[[1]])  (NaN weights)", NonFiniteError, "W_x")(
    lambda: __import__("seqgrad.numeric.recurrent").numeric.recurrent.Params([[math.nan]], [[1.0]], [[1.0]]))
case("numeric.paths", "path_product_sweep(w_h=[], x=0, T=10)  (empty sweep range)", SeqgradValueError, "non-empty")(
    lambda: __import__("seqgrad.numeric.paths").numeric.paths.path_product_sweep([], 0.0, 10))
case("numeric.paths", "path_product_sweep(w_h=1.0, x=0, T=0)", SeqgradValueError, "T=0")(
    lambda: __import__("seqgrad.numeric.paths").numeric.paths.path_product_sweep(1.0, 0.0, 0))
case("numeric.paths", "path_product_sweep(w_h=[1, inf], x=0, T=5)", NonFiniteError, "w_h")(
    lambda: __import__("seqgrad.numeric.paths").numeric.paths.path_product_sweep([1.0, math.inf], 0.0, 5))
case("numeric.paths", "activation('swish')", SeqgradValueError, "swish")(
    lambda: __import__("seqgrad.numeric.paths").numeric.paths.activation("swish"))
case("numeric.paths", "RNNWeights(W_x=ones((3, 2)), W_h=ones((2, 2)))  (mismatched widths)", ShapeError, "W_x")(
    lambda: __import__("seqgrad.numeric.paths").numeric.paths.RNNWeights(_np().ones((3, 2)), _np().ones((2, 2))))
case("numeric.clipping", "clip_global_norm([g], tau=0)", SeqgradValueError, "tau=0")(
    lambda: __import__("seqgrad.numeric.clipping").numeric.clipping.clip_global_norm([_np().ones(3)], tau=0))
case("numeric.clipping", "clip_global_norm([g], tau=-1.0)", SeqgradValueError, "tau")(
    lambda: __import__("seqgrad.numeric.clipping").numeric.clipping.clip_global_norm([_np().ones(3)], tau=-1.0))
case("numeric.clipping", "clip_global_norm([[nan]], tau=1.0)", NonFiniteError, "finite")(
    lambda: __import__("seqgrad.numeric.clipping").numeric.clipping.clip_global_norm([_np().array([math.nan])], tau=1.0))
case("numeric.gated", "GRUWeights(weight_ih=zeros((4, 2)), ...)  (wrong gate weight shapes)", ShapeError, "weight_ih")(
    lambda: __import__("seqgrad.numeric.gated").numeric.gated.GRUWeights(_np().zeros((4, 2)), _np().zeros((6, 2)), _np().zeros(6),
                                                          _np().zeros(6)))
case("numeric.gated", "LSTMWeights(weight_hh=zeros((8, 3)), ...)  (wrong gate weight shapes)", ShapeError, "weight_hh")(
    lambda: __import__("seqgrad.numeric.gated").numeric.gated.LSTMWeights(_np().zeros((8, 2)), _np().zeros((8, 3)), _np().zeros(8),
                                                           _np().zeros(8)))
case("numeric.positions", "sinusoidal(T=0, D=4)", SeqgradValueError, "T=0")(
    lambda: __import__("seqgrad.numeric.positions").numeric.positions.sinusoidal(0, 4))
case("numeric.positions", "sinusoidal(T=3, D=2.0)", SeqgradTypeError, "an integer")(
    lambda: __import__("seqgrad.numeric.positions").numeric.positions.sinusoidal(3, 2.0))
case("numeric.attention", "MultiHeadAttention.random(D=5, n_heads=0)", SeqgradValueError, "n_heads=0")(
    lambda: __import__("seqgrad.numeric.attention").numeric.attention.MultiHeadAttention.random(5, 0))
case("numeric.attention", "attention_mask(3, padding=[True, True])  (wrong-shape mask)", ShapeError, "padding")(
    lambda: __import__("seqgrad.numeric.attention").numeric.attention.attention_mask(3, padding=[True, True]))
case("numeric.attention", "attention_mask(2, exclude=[[True, True], [False, True]])  (a row with every source masked)",
     SeqgradValueError, "at least one source")(
    lambda: __import__("seqgrad.numeric.attention").numeric.attention.attention_mask(2, exclude=[[True, True], [False, True]]))
case("numeric.attention", "Head(W_Q=ones((3, 5)), W_K=ones((3, 4)), W_V=ones((3, 5)))  (shape mismatch)", ShapeError,
     "W_K")(lambda: __import__("seqgrad.numeric.attention").numeric.attention.Head(_torch().ones(3, 5), _torch().ones(3, 4),
                                                                    _torch().ones(3, 5)))
case("numeric.attention", "Head(W_Q=[[nan]], W_K=[[1]], W_V=[[1]])  (NaN weights)", NonFiniteError, "W_Q")(
    lambda: __import__("seqgrad.numeric.attention").numeric.attention.Head([[math.nan]], [[1.0]], [[1.0]]))
case("numeric.layernorm", "layer_norm(H, eps=0)", SeqgradValueError, "eps")(
    lambda: __import__("seqgrad.numeric.layernorm").numeric.layernorm.layer_norm(_torch().ones(2, 3), eps=0.0))
case("numeric.layernorm", "LayerNorm(D=3, eps=-1.0)", SeqgradValueError, "eps")(
    lambda: __import__("seqgrad.numeric.layernorm").numeric.layernorm.LayerNorm(3, eps=-1.0))
case("numeric.encoder", "course.encoder()(ids=[0, 9])  (token id out of range)", SeqgradValueError, "ids=9")(
    lambda: __import__("seqgrad.numeric.course").numeric.course.encoder()([0, 9]))
case("numeric.encoder", "course.encoder()(ids=[0.0, 1.0])  (non-integer ids)", SeqgradTypeError, "integer token ids")(
    lambda: __import__("seqgrad.numeric.course").numeric.course.encoder()([0.0, 1.0]))
case("numeric.encoder", "course.encoder().encode(H0 with a NaN)", NonFiniteError, "H")(
    lambda: __import__("seqgrad.numeric.course").numeric.course.encoder().encode(_torch().full((2, 5), math.nan, dtype=_torch().float64)))
case("numeric.encoder", "course.encoder()(ids) after W_O is set to inf  (inf weights)", NonFiniteError, "W_O")(
    lambda: _inf_weight_encoder()([0, 1]))
case("numeric.encoder", "Encoder.random(K=9, D=5, n_heads=2, F_width=4, mask=...)  with a (3, 3) mask for T=2",
     ShapeError, "mask")(lambda: __import__("seqgrad.numeric.course").numeric.course.encoder().encode(
         _torch().zeros(2, 5, dtype=_torch().float64), mask=_torch().zeros(3, 3, dtype=_torch().float64)))
case("numeric.tokens", "course.token_ids('a zebra')  (unknown word)", SeqgradValueError, "word='zebra'")(
    lambda: __import__("seqgrad.numeric.course").numeric.course.token_ids("a zebra"))
case("numeric.tokens", "course.token_ids('')  (no words)", SeqgradValueError, "at least one word")(
    lambda: __import__("seqgrad.numeric.course").numeric.course.token_ids(""))
case("numeric.tokens", "course.VOCAB.decode([0, 99])  (token id out of range)", SeqgradValueError, "ids=99")(
    lambda: __import__("seqgrad.numeric.course").numeric.course.VOCAB.decode([0, 99]))
case("numeric.encoder", "Encoder.random(K=0, D=4, n_heads=2, F_width=4)", SeqgradValueError, "K=0")(
    lambda: __import__("seqgrad.numeric.encoder").numeric.encoder.Encoder.random(0, 4, 2, 4))
case("numeric.recurrent", "forward(params, X with a NaN)", NonFiniteError, "X")(
    lambda: __import__("seqgrad.numeric.recurrent").numeric.recurrent.forward(
        __import__("seqgrad.numeric.recurrent").numeric.recurrent.Params([[1.0]], [[1.0]], [[1.0]]), [[[math.nan]]]))
case("derive.softmax", "softmax.jacobian([1.0, 2.0])  (numbers, not symbols)", SeqgradValueError, "symbols")(
    lambda: __import__("seqgrad.derive.softmax").derive.softmax.jacobian([1.0, 2.0]))
case("numeric.device", "resolve_device('tpu')", SeqgradValueError, "tpu")(
    lambda: __import__("seqgrad.numeric.device").numeric.device.resolve_device("tpu"))
case("numeric.device", "resolve_dtype('float16')", SeqgradValueError, "float16")(
    lambda: __import__("seqgrad.numeric.device").numeric.device.resolve_dtype("float16"))


# issue 18: entry points that once gave a raw library error or a silent NaN/inf/zero
case("numeric.recurrent", "Params(W_x=None, W_h=[[1]], W_o=[[1]])", SeqgradTypeError, "W_x=None")(
    lambda: __import__("seqgrad.numeric.recurrent").numeric.recurrent.Params(None, [[1.0]], [[1.0]]))
case("numeric.recurrent", "bptt(params, X, y, 'relu') with W = 1e3, T = 60  (the states overflow)", SeqgradValueError,
     "overflow")(lambda: _exploding_rnn("bptt"))
case("numeric.recurrent", "autograd(params, X, y, 'identity') with W = 1e3, T = 60  (the states overflow)",
     SeqgradValueError, "overflow")(lambda: _exploding_rnn("autograd", "identity"))
case("numeric.encoder", "course.encoder()(ids='a journey')  (text, not token ids)", SeqgradTypeError, "integer token ids")(
    lambda: __import__("seqgrad.numeric.course").numeric.course.encoder()(ids="a journey"))
case("numeric.encoder", "Encoder.random(K=9, D=4, n_heads=2, F_width=0)", SeqgradValueError, "F_width=0")(
    lambda: __import__("seqgrad.numeric.encoder").numeric.encoder.Encoder.random(9, 4, 2, 0))
case("numeric.tokens", "course.token_ids(257 words)  (size guard)", SeqgradValueError, "at most 256 words")(
    lambda: __import__("seqgrad.numeric.course").numeric.course.token_ids(" ".join(["a"] * 257)))
case("numeric.positions", "sinusoidal(T=10**8, D=64)  (size guard)", SeqgradValueError, "at most 16777216 entries")(
    lambda: __import__("seqgrad.numeric.positions").numeric.positions.sinusoidal(10**8, 64))
case("numeric.layernorm", "LayerNorm(D=4)(H of width 3)", ShapeError, "(..., 4)")(
    lambda: __import__("seqgrad.numeric.layernorm").numeric.layernorm.LayerNorm(4)(_torch().ones(2, 3, dtype=_torch().float64)))
case("numeric.layernorm", "LayerNorm(D=4, eps=1e-50, dtype=float32)  (eps is 0 in float32)", SeqgradValueError,
     "smallest normal float32")(
    lambda: __import__("seqgrad.numeric.layernorm").numeric.layernorm.LayerNorm(4, eps=1e-50, dtype=_torch().float32))
case("numeric.attention", "MultiHeadAttention.random(4, 2)(X of width 3)", ShapeError, "X=")(
    lambda: __import__("seqgrad.numeric.attention").numeric.attention.MultiHeadAttention.random(4, 2)(
        _torch().ones(2, 3, dtype=_torch().float64)))
case("numeric.attention", "MultiHeadAttention.random(4, 2)(X, M with a row of -inf only)  (the fused path)",
     SeqgradValueError, "at least one source")(
    lambda: __import__("seqgrad.numeric.attention").numeric.attention.MultiHeadAttention.random(4, 2)(
        _torch().ones(2, 4, dtype=_torch().float64),
        _torch().tensor([[-math.inf, -math.inf], [0.0, 0.0]], dtype=_torch().float64)))
case("numeric.attention", "MultiHeadAttention.random(4, 2)(X of 1e300)  (the scores overflow)", SeqgradValueError,
     "overflow")(lambda: __import__("seqgrad.numeric.attention").numeric.attention.MultiHeadAttention.random(4, 2)(
         _torch().full((2, 4), 1e300, dtype=_torch().float64)))
case("derive.softmax", "softmax.softmax([oo, 1])", NonFiniteError, "z[0]=oo")(
    lambda: __import__("seqgrad.derive.softmax").derive.softmax.softmax([__import__("sympy").oo, 1]))
case("derive.program", "rnn.unroll(3).program.evaluate(L, {})  (nothing to evaluate)", SeqgradValueError,
     "at least one symbol")(lambda: _rnn().unroll(3).program.evaluate(_rnn().unroll(3).L, {}))
case("derive.program", "rnn.unroll(3).program.evaluate(L, {w_x: 'abc'})", ParseError, "'abc'")(
    lambda: _rnn().unroll(3).program.evaluate(_rnn().unroll(3).L, {__import__("sympy").Symbol("w_x"): "abc"}))
case("seqgrad.atomic", "atomic.write_text('newdir/', text)  (a directory, not a file)", SeqgradValueError,
     "names a directory")(lambda: __import__("seqgrad.atomic").atomic.write_text("newdir/", "x"))


def _exploding_rnn(reference: str, activation: str = "relu"):
    import numpy as np

    from seqgrad.numeric import recurrent

    params = recurrent.Params(np.full((2, 2), 1e3), np.full((2, 2), 1e3), np.ones((1, 2)))
    return getattr(recurrent, reference)(params, np.ones((1, 60, 2)), np.ones((1, 1)), activation)


def _inf_weight_encoder():
    import torch

    from seqgrad.numeric import course

    enc = course.encoder()
    with torch.no_grad():
        enc.blocks[0].attention.W_O[0, 0] = math.inf
    return enc


# ---------------------------------------------------------------- crosscheck and seqgrad

case("crosscheck.tolerance", "compare([1, 2], [1, 2, 3])  (shape mismatch)", SeqgradValueError, "shape")(
    lambda: __import__("seqgrad.crosscheck.tolerance").crosscheck.tolerance.compare([1.0, 2.0], [1.0, 2.0, 3.0]))
case("crosscheck.tolerance", "tolerance(dtype='float16')", SeqgradValueError, "float16")(
    lambda: __import__("seqgrad.crosscheck.tolerance").crosscheck.tolerance.tolerance("float16"))
case("crosscheck.tolerance", "tolerance(device='tpu')", SeqgradValueError, "tpu")(
    lambda: __import__("seqgrad.crosscheck.tolerance").crosscheck.tolerance.tolerance(device="tpu"))
case("crosscheck.lambdify", "lambdify(program, outputs, args, backend='jax')", SeqgradValueError, "backend")(
    lambda: _lambdify_backend("jax"))
def _softmax_example(scores):
    from seqgrad.crosscheck.worked_numbers import softmax_example

    return softmax_example(scores)


for _call, _scores in (("softmax_example([2.0])  (one score)", [2.0]),
                       ("softmax_example([1.0, float('nan')])  (NaN score)", [1.0, math.nan]),
                       ("softmax_example([1.0, float('inf')])  (infinite score)", [1.0, math.inf]),
                       ("softmax_example([0.0, 5000.0])  (a score of magnitude 1000 or more)", [0.0, 5000.0]),
                       ("softmax_example('1 2 3')  (text, not numbers)", "1 2 3"),
                       ("softmax_example([1.0, 'b'])  (an entry that is not a number)", [1.0, "b"]),
                       ("softmax_example(3.0)  (a number, not a row)", 3.0)):
    case("crosscheck.worked_numbers", _call, SeqgradValueError, "scores=")(lambda s=_scores: _softmax_example(s))
case("crosscheck.worked_numbers", "shift_example(d=5)  (an odd width: one coordinate has no pair)", SeqgradValueError,
     "d=5")(lambda: __import__("seqgrad.crosscheck.worked_numbers").crosscheck.worked_numbers.shift_example(d=5))
case("crosscheck.worked_numbers", "residual_example(x=(1.0, 2.0), W=((1.0, 0.0),))  (W not square of x's width)",
     SeqgradValueError, "x, W=")(lambda: __import__("seqgrad.crosscheck.worked_numbers").crosscheck.worked_numbers
                                 .residual_example(x=(1.0, 2.0), W=((1.0, 0.0),)))
case("numeric.cue_recall", "models.build('lstm', 8, 6206)", SeqgradValueError, "model='lstm'")(
    lambda: __import__("seqgrad.numeric.cue_recall.models").numeric.cue_recall.models.build("lstm", 8, 6206))
case("numeric.cue_recall", "models.build('rnn', 0, 6206)", SeqgradValueError, "delay=0")(
    lambda: __import__("seqgrad.numeric.cue_recall.models").numeric.cue_recall.models.build("rnn", 0, 6206))
case("numeric.cue_recall", "task.generate(16, 8, seed=1.5)", SeqgradTypeError, "seed=1.5")(
    lambda: __import__("seqgrad.numeric.cue_recall.task").numeric.cue_recall.task.generate(16, 8, 1.5))
case("numeric.cue_recall", "task.split('holdout', 8)", SeqgradValueError, "split='holdout'")(
    lambda: __import__("seqgrad.numeric.cue_recall.task").numeric.cue_recall.task.split("holdout", 8))
case("seqgrad.sigfig", "sigfig.matches(0.1, 0.1, figures=0)", SeqgradValueError, "figures")(
    lambda: __import__("seqgrad.sigfig").sigfig.matches(0.1, 0.1, figures=0))
case("seqgrad.sigfig", "sigfig.decimals_tolerance('0.1.2')", ParseError, "decimal number")(
    lambda: __import__("seqgrad.sigfig").sigfig.decimals_tolerance("0.1.2"))
case("seqgrad.validate", "validate.integer('T', True)", SeqgradTypeError, "an integer")(
    lambda: __import__("seqgrad.validate").validate.integer("T", True))


def _lambdify_backend(backend: str):
    from seqgrad.crosscheck.lambdify import lambdify
    from seqgrad.derive import rnn

    net = rnn.unroll(2)
    return lambdify(net.program, [net.L], list(net.program.leaves()), backend=backend)


# ---------------------------------------------------------------- the command line

cli(["frobnicate"], UsageError, "invalid choice: 'frobnicate'")
cli(["verify", "sin(x) = y", "--vars", "x"], ParseError, "'y' is not on the whitelist")
cli(["derive", "lstm", "--general", "--plain"], SeqgradValueError, "--latex too")
cli(["derive", "lstm", "--general", "--symbol", "q=k"], SeqgradValueError, "a symbol this derivation prints")
cli(["derive", "rnn", "--steps", "2", "--table", "--symbol", "w_h=U"], SeqgradValueError, "not with --table")
cli(["derive", "lstm", "--general", "--latex", "--symbol", "q=k"], SeqgradValueError, "a symbol this derivation prints")
cli(["verify", "x = x", "--vars", "x", "--points", "0"], SeqgradValueError, "points")
cli(["verify", "trace(A*B) = trace(B*A)", "--shape", "A:n,m B:n,n"], ParseError, "the product needs m = n")
cli(["verify", "log(x) = 1", "--vars", "x", "--assume", "y > 0"], ParseError, "a bound on a declared variable")
cli(["diff", "A*y", "--wrt", "x", "--shape", "A:n,n x:n"], ParseError, "'y' is not declared")
cli(["diff", "A*x", "--wrt", "x", "--shape", "A:n,m x:n"], ParseError, "the product needs m = n")
cli(["diff", "A**2", "--wrt", "A", "--shape", "A:n,n"], ParseError, "a matrix power")
cli(["diff", "rmsnorm(X, -1)", "--wrt", "X", "--shape", "X:T,d"], ParseError, "the eps of rmsnorm() is a positive scalar")
cli(["diff", "trace(A)", "--wrt", "B", "--shape", "A:n,n"], ParseError, "wrt='B'")
cli(["check", "--bogus"], UsageError, "unrecognized arguments: --bogus")
cli(["check", "--only", "no-such-check"], SeqgradValueError, "--only='no-such-check'")
cli(["check", "--dtype", "float16"], UsageError, "argument --dtype")
cli(["check", "--device", "tpu"], UsageError, "argument --device")
cli(["check", "--out", "/proc/seqgrad-report"], SeqgradValueError, "--out")
cli(["check", "--jobs", "0"], SeqgradValueError, "--jobs='0'")
cli(["check", "--jobs", "two"], UsageError, "argument --jobs")
cli(["derive", "nosuchmodel"], UsageError, "argument MODEL")
cli(["derive", "rnn"], UsageError, "--steps")
cli(["derive", "rnn", "--steps", "0"], SeqgradValueError, "steps=0")
cli(["derive", "rnn", "--general", "--on", "0,x"], SeqgradValueError, "--on")
cli(["derive", "gru", "--steps", "3", "--general"], UsageError, "not allowed with argument")
cli(["derive", "cell", "z = w*x; h = tanh(z)", "--states", "c", "--params", "w v", "--head", "v*h", "--general"],
    SeqgradValueError, "states")
cli(["derive", "cell", "h = tanh(w*x + w*h_prev_prev)", "--states", "h", "--params", "w v", "--head", "v*h", "--general"],
    SeqgradValueError, "first-order")
cli(["derive", "cell", "h = tanh(w*x)", "--states", "h", "--params", "w:H,D v:C,H", "--head", "v*h", "--sizes", "D=two",
     "--general"], SeqgradValueError, "--sizes")
cli(["derive", "cell", "h = f(w*x)", "--states", "h", "--params", "w v", "--head", "v*h", "--function", "f(z) = __import__('os')",
     "--general"], SeqgradValueError, "--function")
cli(["derive", "rnn", "--steps", "2.5"], UsageError, "invalid int value: '2.5'")
cli(["derive", "rnn", "--steps", "3", "--activation", "swish"], SeqgradValueError, "activation='swish'")
cli(["derive", "rnn", "--steps", "3", "--activation", PAYLOAD], SeqgradValueError, "activation=")
cli(["derive", "rnn", "--steps", "3", "--inputs", "0"], SeqgradValueError, "inputs=0")
cli(["derive", "rnn", "--steps", "3", "--hidden", "-2"], SeqgradValueError, "hidden=-2")
cli(["derive", "rnn", "--steps", "3", "--outputs", "0"], SeqgradValueError, "outputs=0")
cli(["derive", "rnn", "--steps", "3", "--loss", "median"], UsageError, "argument --loss")
cli(["derive", "rnn", "--steps", "3", "--reduction", "max"], UsageError, "argument --reduction")
cli(["derive", "rnn", "--steps", "3", "--max-terms", "0"], SeqgradValueError, "--max-terms=0")
cli(["derive", "rnn", "--steps", "40", "--expand", "--max-terms", "1000"], SizeGuardError, "size guard")
cli(["derive", "rnn", "--steps", "3", "--latex", "--table"], UsageError, "not allowed with argument")
cli(["derive", "rnn", "--steps", "100000"], SeqgradValueError, "steps=100000")
cli(["encoder", "--text", "a zebra"], SeqgradValueError, "word='zebra'")
cli(["encoder", "--text", ""], SeqgradValueError, "at least one word")
cli(["encoder", "--stage", "decoder"], UsageError, "argument --stage")
cli(["encoder", "--show", "nothing"], SeqgradValueError, "--show='nothing'")
cli(["encoder", "--dtype", "int8"], UsageError, "argument --dtype")
cli(["encoder", "--json", "--latex"], UsageError, "not allowed with argument")
cli(["encoder", "--out", "/proc/seqgrad/encoder.json"], SeqgradValueError, "--out")
cli(["identities", "--only", "no-such-identity"], SeqgradValueError, "no-such-identity")
cli(["claim", "1 +* 2 = 3"], ParseError, "claim")
cli(["claim", PAYLOAD + " = 0"], ParseError, "attribute access")
cli(["claim", "1 = 1", "--digits", "5"], SeqgradValueError, "digits=5")
cli(["claim", "1 = 1", "--figures", "0"], SeqgradValueError, "figures=0")
cli(["claim", "1 = 1", "--figures", "x"], UsageError, "invalid int value")
cli(["claim", "sqrt(-2) = 1"], UndefinedError, "not a real number")
cli(["latex", "notes.tex", "--sections", "rnn,nosuchsection"], SeqgradValueError, "nosuchsection")
cli(["latex", "notes.tex", "--proof-seconds", "0"], SeqgradValueError, "--proof-seconds=0")
cli(["latex", "notes.tex", "--jobs", "-1"], SeqgradValueError, "--jobs='-1'")
cli(["latex", "notes.tex", "--proof-seconds", "nan"], NonFiniteError, "finite")
cli(["latex", "notes.tex", "--symbol", "w_h"], SeqgradValueError, "--symbol='w_h'")
cli(["latex", "notes.tex", "--symbol", "w_h=W_{hh"], SeqgradValueError, "balanced braces")
cli(["latex", "notes.tex", "--symbol", "w_h=$W$"], SeqgradValueError, "unescaped '$'")
cli(["latex", "notes.tex", "--jobs", "0"], SeqgradValueError, "--jobs='0'")
cli(["latex", "/proc/seqgrad/notes.tex", "--sections", "rnn"], SeqgradValueError, "OUT.tex=")
cli(["encoder", "--device", "tpu"], UsageError, "argument --device")
cli(["encoder", "--out", ""], SeqgradValueError, "--out='' is not allowed: a file path (it is empty)")
cli(["encoder", "--out", "newdir/"], SeqgradValueError, "names a directory")
cli(["encoder", "--text", " ".join(["a"] * 257)], SeqgradValueError, "at most 256 words")
cli(["derive", "rnn", "--steps", "6000", "--latex"], SeqgradValueError, "an integer from 1 to 5000")
cli(["check", "--out", ""], SeqgradValueError, "--out=''")
cli(["identities", "--only"], UsageError, "expected one argument")
cli(["claim", "1 = 1", "--figures", "3", "--exact"], UsageError, "not allowed with argument")
cli(["claim"], UsageError, "CLAIM")
cli(["latex", "notes.tex", "--device", "tpu"], UsageError, "argument --device")
cli(["latex"], UsageError, "OUT.tex")
cli(["plot", "paths", "--device", "tpu"], UsageError, "argument --device")
cli(["plot", "nosuchset"], UsageError, "argument SET")
cli(["plot", "paths", "--format", "gif"], UsageError, "argument --format")
cli(["plot", "paths", "--out", "/proc/seqgrad-figures"], SeqgradValueError, "--out")
cli(["derive", "conv", "--size", "3", "--kernel", "5"], SeqgradValueError, "kernel=5")
cli(["derive", "conv", "--stride", "0"], SeqgradValueError, "--stride=0")
cli(["derive", "conv", "--size", "4"], SeqgradValueError, "--size/--kernel")
cli(["derive", "conv", "--size", "40", "--kernel", "3"], SeqgradValueError, "--size=40")
cli(["derive", "decoder", "--part", "causal", "--positions", "9"], SeqgradValueError, "--positions=9")
cli(["derive", "decoder", "--heads", "3"], SeqgradValueError, "heads=3")
cli(["derive", "decoder", "--part", "encoder"], UsageError, "argument --part")
cli(["generate", "--max-len", "0"], SeqgradValueError, "--max-len=0")
cli(["generate", "--text", "I hate ML"], SeqgradValueError, "word='hate'")
cli(["generate", "--text", ""], SeqgradValueError, "at least one word")
cli(["generate", "--train-steps", "0"], SeqgradValueError, "--train-steps=0")


# ---------------------------------------------------------------- decoder and convolution (issue 14)


def _dec():
    import torch

    from seqgrad.numeric.decoder import Decoder

    return Decoder.random(5, 8, 2, 16), torch


def _model():
    from seqgrad.numeric.decoder import EncoderDecoder

    return EncoderDecoder.random(4, 5, 8, 2, 16)


def _f64(torch, *shape):
    return torch.zeros(*shape, dtype=torch.float64)


case("numeric.decoder", "Decoder(D=8).decode(H (5, 8), H_enc (3, 6))  (memory and target widths disagree)", ShapeError,
     "memory width must equal the decoder width D=8")(lambda: (lambda d, t: d.decode(_f64(t, 5, 8), _f64(t, 3, 6)))(*_dec()))
case("numeric.decoder", "Decoder.decode(H (0, 8), H_enc)  (an empty target sequence)", ShapeError, "H=(0, 8)")(
    lambda: (lambda d, t: d.decode(_f64(t, 0, 8), _f64(t, 3, 8)))(*_dec()))
case("numeric.decoder", "Decoder.decode(H, H_enc (0, 8))  (an empty memory)", ShapeError, "T_src >= 1")(
    lambda: (lambda d, t: d.decode(_f64(t, 5, 8), _f64(t, 0, 8)))(*_dec()))
case("numeric.decoder", "Decoder.decode(H (5, 8), H_enc, mask=(4, 4))  (a mask of the wrong shape)", ShapeError, "(5, 5)")(
    lambda: (lambda d, t: d.decode(_f64(t, 5, 8), _f64(t, 3, 8), mask=_f64(t, 4, 4)))(*_dec()))
case("numeric.decoder", "Decoder.decode(H (5, 8), H_enc (3, 8), memory_mask=(5, 4))", ShapeError, "memory_mask=(5, 4)")(
    lambda: (lambda d, t: d.decode(_f64(t, 5, 8), _f64(t, 3, 8), memory_mask=_f64(t, 5, 4)))(*_dec()))
case("numeric.decoder", "Decoder.decode(H, H_enc (3, 8), memory_padding=[1, 1])", ShapeError, "memory_padding=(2,)")(
    lambda: (lambda d, t: d.decode(_f64(t, 5, 8), _f64(t, 3, 8), memory_padding=[1, 1]))(*_dec()))
case("numeric.decoder", "Decoder(K=5)([0, 7], H_enc)  (a target token outside the vocabulary)", SeqgradValueError, "ids=7")(
    lambda: (lambda d, t: d([0, 7], _f64(t, 3, 8)))(*_dec()))
case("numeric.decoder", "EncoderDecoder.generate([1, 2], max_len=0)", SeqgradValueError, "max_len=0")(
    lambda: _model().generate([1, 2], 0))
case("numeric.decoder", "EncoderDecoder.generate([1, 2], max_len=-3)", SeqgradValueError, "max_len=-3")(
    lambda: _model().generate([1, 2], -3))
case("numeric.decoder", "EncoderDecoder.generate([1, 9], 5)  (a source token outside the vocabulary)", SeqgradValueError, "ids=9")(
    lambda: _model().generate([1, 9], 5))
case("numeric.decoder", "EncoderDecoder.generate([], 5)  (an empty source sentence)", ShapeError, "src_ids=(0,)")(
    lambda: _model().generate([], 5))


def _nconv():
    import torch

    from seqgrad.numeric import conv

    return conv, torch


case("numeric.conv", "conv(X (2, 3), K (5,))  (a kernel larger than the input, no padding)", ShapeError, "at most H + 2P")(
    lambda: (lambda c, t: c.conv(_f64(t, 2, 3), _f64(t, 5)))(*_nconv()))
case("numeric.conv", "conv(X (2, 8), K (2,), stride=0)", SeqgradValueError, "stride=0")(
    lambda: (lambda c, t: c.conv(_f64(t, 2, 8), _f64(t, 2), stride=0))(*_nconv()))
case("numeric.conv", "conv(X (2, 0), K (2,))  (an empty sequence)", ShapeError, "X=(2, 0)")(
    lambda: (lambda c, t: c.conv(_f64(t, 2, 0), _f64(t, 2)))(*_nconv()))
case("numeric.conv", "max_pool2d(X (1, 2, 2), pool=3)", ShapeError, "pool=(3,)")(
    lambda: (lambda c, t: c.max_pool2d(_f64(t, 1, 2, 2), 3))(*_nconv()))
case("derive.conv", "ExplicitConv((3,), (5,))  (a kernel larger than the input, no padding)", SeqgradValueError, "kernel=5")(
    lambda: __import__("seqgrad.derive.conv").derive.conv.ExplicitConv((3,), (5,)))
case("derive.conv", "Conv2d(stride=0)", SeqgradValueError, "stride=0")(lambda: __import__("seqgrad.derive.conv").derive.conv.Conv2d(stride=0))
case("derive.conv", "receptive_field([3, 3], strides=[1])", SeqgradValueError, "one stride per layer")(
    lambda: __import__("seqgrad.derive.conv").derive.conv.receptive_field([3, 3], [1]))
case("derive.decoder", "CrossAttention(2, 3, 1, 1, mask=2 x 2)  (a mask of the wrong shape)", ShapeError, "2 x 3")(
    lambda: __import__("seqgrad.derive.decoder").derive.decoder.CrossAttention(2, 3, 1, 1, mask=[[0, 0], [0, 0]]))
cli(["experiment", "cue-recall", "--models", "rnn,lstm"], SeqgradValueError, "--models='lstm'")
cli(["experiment", "cue-recall", "--delays", "8,0"], SeqgradValueError, "--delays=0")
cli(["experiment", "cue-recall", "--delays", "8,,32"], SeqgradValueError, "without empty items")
cli(["experiment", "cue-recall", "--seeds", "6206,x"], SeqgradValueError, "comma-separated integers")
cli(["experiment", "cue-recall", "--seeds", "1.5"], SeqgradValueError, "--seeds='1.5'")
cli(["experiment", "cue-recall", "--jobs", "0"], SeqgradValueError, "--jobs=0")
cli(["experiment", "cue-recall", "--batch-size", "0"], SeqgradValueError, "--batch-size=0")
cli(["experiment", "cue-recall", "--loss", "every"], UsageError, "argument --loss")
cli(["experiment", "cue-recall", "--out", "/proc/seqgrad-experiments"], SeqgradValueError, "--out")
cli(["experiment", "cue-recall", "--device", "tpu"], UsageError, "argument --device")
cli(["experiment", "nosuchexperiment"], UsageError, "argument NAME")


# ---------------------------------------------------------------- Cell.from_torch (issue 27)


def _from_torch(make, **kw):
    def run():
        import torch

        from seqgrad.derive.cell import Cell

        return Cell.from_torch(make(torch), **kw)

    return run


def _exp_step(torch):
    class ExpStep(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 4)

        def forward(self, x, h):
            return torch.exp(self.lin(x)) * h

    return ExpStep()


def _example(torch, *widths):
    return tuple(torch.zeros(1, w) for w in widths)


case("derive.from_torch", "Cell.from_torch(nn.Linear(3, 4))  (not recurrent)", SeqgradValueError, "recurrent module")(
    _from_torch(lambda torch: torch.nn.Linear(3, 4)))
case("derive.from_torch", "Cell.from_torch(nn.GRU(3, 4, bidirectional=True))", SeqgradValueError, "bidirectional")(
    _from_torch(lambda torch: torch.nn.GRU(3, 4, bidirectional=True)))
case("derive.from_torch", "Cell.from_torch(step with torch.exp, states='h', ...)  (unknown function)", SeqgradValueError,
     "torch.exp at bad_input_cases.py")(
    lambda: _from_torch(_exp_step, states="h", example=_example(__import__("torch"), 3, 4))())
case("derive.from_torch", "Cell.from_torch(step, states='h c', example=(x, h))  (state arity)", SeqgradValueError,
     "one state tensor per name")(lambda: _from_torch(_exp_step, states="h c", example=_example(__import__("torch"), 3, 4))())
case("derive.from_torch", "Cell.from_torch('gru')", SeqgradTypeError, "torch.nn.Module")(
    lambda: __import__("seqgrad.derive.cell").derive.cell.Cell.from_torch("gru"))
cli(["derive", "torch", "no_such_module_xyz:cell"], SeqgradValueError, "MODULE_PATH")
cli(["derive", "torch", "1+1"], SeqgradValueError, "MODULE_PATH:NAME")
cli(["derive", "torch", PAYLOAD + ":cell"], SeqgradValueError, "MODULE_PATH:NAME")


# ---------------------------------------------------------------- injection payloads, every entry point


def _injection_cases():
    from injection_targets import targets

    for description, call in targets():
        CASES.append(Case("injection", description.replace("payload", repr(PAYLOAD)), (lambda c=call: c(PAYLOAD)),
                          SeqgradError, "", None))


_injection_cases()


# ---------------------------------------------------------------- the page


def markdown() -> str:
    lines = [
        "# Bad input and the error it gets",
        "",
        "Every row is a test: `tests/bad_input_cases.py` holds the cases, `tests/test_bad_input_table.py` runs each "
        "one and checks the exception class and the message fragment, and this page is generated from the same list "
        "(`python tests/bad_input_cases.py > docs/bad-input.md`; a test fails when it is out of date).",
        "",
        "Every error is a subclass of `seqgrad.errors.SeqgradError` (and of `ValueError` or `TypeError`) whose "
        "message names the argument, the value and what is allowed. The command line turns each into one line on "
        "standard error and exit status 2, never a traceback, and names the option the user typed (`--points=0 is "
        "not allowed: ...` where the library says `points=0`); `UsageError` below stands for the command line's own "
        "one-line refusal of an unknown command, option or choice.",
        "",
        f"The injection payload is `{PAYLOAD}`: it is refused by every entry point that takes a symbolic "
        "argument, and it never runs (a test checks that the file it would create does not appear).",
        "",
    ]
    areas: dict[str, list[Case]] = {}
    for c in CASES:
        areas.setdefault(c.area, []).append(c)
    for area, cases in areas.items():
        lines += [f"## {area}", "", "| bad input | error | message contains |", "|---|---|---|"]
        for c in cases:
            fragment = f"`{_cell(c.fragment)}`" if c.fragment else "(any refusal)"
            lines.append(f"| `{_cell(c.call)}` | `{c.error.__name__}` | {fragment} |")
        lines.append("")
    return "\n".join(lines)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("`", "'")


if __name__ == "__main__":
    sys.stdout.write(markdown())
