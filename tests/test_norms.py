"""derive.blocks' normalisations as one argument (``norm=``): RMSNorm defined once (its forward lines in
derive.blocks, its two rule primitives in derive.rules, proved at symbolic size) and compiled from that one
definition, against torch.nn.functional.rms_norm and a hand-written torch formula in float64, alone and in
pre-norm and post-norm blocks, at several sizes."""

import pytest
import sympy as sp

from seqgrad.derive import blocks, rules
from seqgrad.errors import SeqgradValueError


def test_rmsnorm_backward_prints_in_xhat_and_r():
    prog = blocks.norm_program("rmsnorm").program
    assert str(prog["r"]) == "r = rms(X)"
    assert str(prog["Xhat"]) == "Xhat = rmsnormalize(X)"
    assert str(prog["Y"]) == "Y = Xhat ∘ (1*gamma)"
    assert str(prog["dX"]) == "dX = (1/r) ∘ (dXhat - Xhat ∘ mean(dXhat ∘ Xhat))"
    assert "beta" not in blocks.norm_program("rmsnorm").inputs  # no shift


@pytest.mark.parametrize("placement", blocks.PLACEMENTS)
def test_blocks_take_the_norm_as_an_argument(placement):
    ln = blocks.block_program(placement)
    rms = blocks.block_program(placement, norm="rmsnorm")
    assert "beta_att" in ln.inputs and "beta_att" not in rms.inputs
    assert blocks.rules_used(rms).count("rmsnorm") == 1 and "layernorm" not in blocks.rules_used(rms)
    assert blocks.prove_program(rms).holds
    assert str(blocks.block_program(placement, norm=blocks.RMSNORM)) == str(rms)


@pytest.mark.parametrize("norm", ["batchnorm", "LayerNorm", 3, None])
def test_an_unknown_norm_is_one_clear_error(norm):
    with pytest.raises(SeqgradValueError, match=r"norm.*'layernorm', 'rmsnorm'"):
        blocks.block_program(norm=norm)
    with pytest.raises(SeqgradValueError, match=r"norm.*'layernorm', 'rmsnorm'"):
        blocks.norm_program(norm)


@pytest.mark.parametrize("name", ["rms", "rmsnorm"])
def test_the_rmsnorm_rules_are_proved_at_symbolic_size(name):
    assert rules.RULES[name].prove().holds


@pytest.mark.parametrize("drop", ["nothing", "inner product", "root", "mean"])
def test_a_subtly_wrong_rmsnorm_pullback_is_not_proved(drop):
    """dX = (1/r)(G - x̂ ∘ mean(G ∘ x̂)) with one piece wrong (mean(G) for mean(G ∘ x̂), 1/r² for 1/r, LayerNorm's
    extra - mean(G)) is refused; the same construction with nothing wrong is proved."""
    from dataclasses import replace

    from seqgrad.derive.elementwise import Elementwise

    u = sp.Dummy("u")

    def pull(e, G, out):
        inner = rules.RowMean(G) if drop == "inner product" else rules.RowMean(sp.HadamardProduct(G, e))
        terms = [G, sp.HadamardProduct(e, inner)] + ([rules.RowMean(G)] if drop == "mean" else [])
        inv = Elementwise(sp.Lambda(u, 1 / u ** (2 if drop == "root" else 1)), rules.RowRMS(e.arg, e.eps))
        return [(e.arg, sp.HadamardProduct(inv, rules._minus(*terms)))]

    rule = replace(rules.RULES["rmsnorm"], pull=pull, forward=lambda e, t: pull(e, t[e.arg], None)[0][1] if e.arg in t else None)
    assert rule.prove().holds is (drop == "nothing")


@pytest.mark.parametrize("node", [rules.RowStd, rules.Normalize, rules.RowRMS, rules.RMSNormalize])
def test_the_definition_numeric_code_runs_is_the_entry_the_rule_is_proved_on(node):
    """Compiled code evaluates ``definition()`` (mean, Hadamard, a root; LayerNorm's and RMSNorm's maps alike);
    the rule's proof differentiates ``_entry``: the two are equal at symbolic size, so the proof covers what runs."""
    T, d = sp.symbols("T d", integer=True, positive=True)
    i, j = sp.symbols("i j", integer=True, nonnegative=True)
    X = sp.MatrixSymbol("X", T, d)
    e = node(X)
    assert rules.index_zero(rules.index_form(e.definition(), i, j) - rules.index_form(e, i, j)) == 0
    wrong = node(X, 2 * rules.EPS)  # a residual that does not vanish is not reduced to 0
    assert rules.index_zero(rules.index_form(wrong.definition(), i, j) - rules.index_form(e, i, j)) != 0


torch = pytest.importorskip("torch")

SIZES = ({"T": 7, "d": 5, "d_k": 3, "d_v": 3}, {"T": 1, "d": 1, "d_k": 1, "d_v": 1}, {"T": 3, "d": 8, "d_k": 2, "d_v": 4},
         {"T": 9, "d": 2, "d_k": 5, "d_v": 1})


def _hand_rmsnorm(X, gamma):
    """RMSNorm written out in torch: X / sqrt(mean(X^2) + eps) * gamma (Zhang & Sennrich 2019)."""
    return X / torch.sqrt((X * X).mean(-1, keepdim=True) + 1e-5) * gamma.reshape(-1)


def _hand_reference(kind):
    from seqgrad.crosscheck.blocks import _reference_heads

    def reference(v):
        if kind == "norm":
            return _hand_rmsnorm(v["X"], v["gamma"])
        H, heads = v["H"], 2 if "W_O" in v else 1
        dk = v["W_Q" if heads == 1 else "W_Q^[1]"].shape[0]
        if kind == "pre-norm":
            return H + _reference_heads(v, _hand_rmsnorm(H, v["gamma_att"]), heads, dk)
        return _hand_rmsnorm(H + _reference_heads(v, H, heads, dk), v["gamma_att"])

    return reference


def _close(rows):
    for name, derived, expected in rows:
        assert derived.dtype == torch.float64 and derived.shape == expected.shape, name
        gap = float((derived - expected).abs().max())
        assert gap < 1e-12 * max(1.0, float(expected.abs().max())), (name, gap)


@pytest.mark.parametrize("kind,heads", [("norm", 1), ("pre-norm", 1), ("pre-norm", 2), ("post-norm", 1), ("post-norm", 2)])
@pytest.mark.parametrize("oracle", ["rms_norm", "hand"])
def test_rmsnorm_against_torch_rms_norm_and_a_hand_written_formula(kind, heads, oracle):
    """float64, < 1e-12 relative to the largest entry: the output and every gradient (dX or dH, dgamma, the
    attention weights), from the one compiled symbolic-size program, at four sizes (d = 1 included)."""
    from seqgrad.crosscheck import blocks as c_blocks

    g = torch.Generator().manual_seed(24)
    for s in SIZES:
        rows = c_blocks.compare_at(kind, s, g, heads, norm="rmsnorm",
                                   reference_fn=None if oracle == "rms_norm" else _hand_reference(kind))
        assert [n for n, *_ in rows][:2] == ["forward", "dX" if kind == "norm" else "dH"]
        assert any(n.startswith("dgamma") for n, *_ in rows)
        _close(rows)


def test_the_comparison_fails_on_a_wrong_norm():
    """The test above can fail: RMSNorm's compiled program against LayerNorm's torch function (the mean not
    subtracted) is far apart."""
    from seqgrad.crosscheck import blocks as c_blocks

    g = torch.Generator().manual_seed(24)

    def layer_norm(v):
        return torch.nn.functional.layer_norm(v["X"], (v["X"].shape[-1],), v["gamma"].reshape(-1), None, 1e-5)

    rows = c_blocks.compare_at("norm", SIZES[0], g, norm="rmsnorm", reference_fn=layer_norm)
    with pytest.raises(AssertionError):
        _close(rows)


def test_a_norm_of_your_own_is_one_definition():
    """A :class:`derive.blocks.Norm` built from the table's primitives is a block's norm with no other edit:
    LayerNorm without its shift, against torch's layer_norm with bias None, in a post-norm block."""
    from seqgrad.crosscheck import blocks as c_blocks

    def lines(prog, X, inputs, tag, eps):
        gamma = inputs.setdefault("gamma" + tag, sp.MatrixSymbol("gamma" + tag, 1, X.shape[1]))
        xhat = prog.define(sp.MatrixSymbol("xhat" + tag, *X.shape), rules.Normalize(X, eps))
        return prog.define(sp.MatrixSymbol("Y" + tag, *X.shape), sp.HadamardProduct(xhat, sp.MatMul(sp.OneMatrix(X.shape[0], 1), gamma)))

    unbiased = blocks.Norm("layernorm-without-shift", lines)
    from seqgrad.crosscheck.blocks import _reference_heads

    def reference(v):
        H = v["H"]
        Z = H + _reference_heads(v, H, 1, v["W_Q"].shape[0])
        return torch.nn.functional.layer_norm(Z, (Z.shape[-1],), v["gamma_att"].reshape(-1), None, 1e-5)

    g = torch.Generator().manual_seed(5)
    _close(c_blocks.compare_at("post-norm", SIZES[0], g, 1, norm=unbiased, reference_fn=reference))


@pytest.mark.parametrize("text,shapes", [("rmsnorm(X)", "X:T,d"), ("rmsnorm(x)", "x:n"), ("sum(rmsnorm(X, 2))", "X:T,d")])
def test_the_matrix_language_reads_rmsnorm_and_its_derivative_agrees_with_autograd(text, shapes):
    """``rmsnorm(X[, eps])`` in ``seqgrad diff`` / ``derive.diff``: the rmsnorm rule, compiled (numpy and torch)
    through the definition, against torch autograd; a column's pullback is shown with rms(x) as the scalar it is."""
    from seqgrad import derive
    from seqgrad.crosscheck import matcalc

    d = derive.diff(text, shapes.split(":")[0], shapes=shapes)
    assert "rmsnorm" in d.rules
    assert matcalc.check(d).passed
    if shapes == "x:n":
        assert d.pretty().splitlines()[1] == "J = 1/rms(x) (I − rmsnormalize(x) rmsnormalize(x)ᵀ/n)"


def test_rmsnorm_refuses_a_non_positive_eps():
    from seqgrad import derive
    from seqgrad.errors import SeqgradError

    with pytest.raises(SeqgradError, match=r"eps of rmsnorm\(\) is a positive scalar"):
        derive.diff("rmsnorm(X, -1)", "X", shapes="X:T,d")


# --- the closed forms are statements proved equal to the one program, never a second definition -------------

@pytest.fixture
def broken_layernorm_rule(monkeypatch):
    """The table's LayerNorm pullback without its - mean(G) term: every path that reads the one LayerNorm program
    sees it; a path through a second, hand-typed LayerNorm would not."""
    from dataclasses import replace

    from seqgrad.crosscheck import blocks as c_blocks

    good = rules.RULES["layernorm"]

    u = sp.Dummy("u")
    from seqgrad.derive.elementwise import Elementwise

    def broken(e, G, out):
        (leaf, value), = good.pull(e, G, out)
        inv = Elementwise(sp.Lambda(u, 1 / u), rules.RowStd(e.arg, e.eps))
        return [(leaf, value + sp.HadamardProduct(inv, rules.RowMean(G)))]  # the - mean(G) cancelled

    bad = replace(good, pull=broken)
    monkeypatch.setitem(rules.RULES, "layernorm", bad)
    monkeypatch.setattr(rules, "_TABLE", [bad if r is good else r for r in rules._TABLE])
    c_blocks.program.cache_clear()
    c_blocks.compiled.cache_clear()
    yield
    c_blocks.program.cache_clear()
    c_blocks.compiled.cache_clear()


def test_the_layernorm_closed_form_is_proved_against_the_program():
    from seqgrad.derive import catalogue

    assert catalogue.get("layernorm-jacobian").prover().holds
    assert catalogue.get("rmsnorm-jacobian").prover().holds


def test_a_wrong_program_refutes_the_closed_form_and_fails_the_jacobian_check(broken_layernorm_rule):
    """With the program's LayerNorm rule broken, the catalogue's closed form no longer proves, and the check's
    Jacobian rows (read off the program) disagree with autograd: neither reads a second LayerNorm definition."""
    from seqgrad.crosscheck.checks import transformer
    from seqgrad.derive import catalogue
    from seqgrad.numeric.layernorm import LayerNorm

    assert not catalogue.get("layernorm-jacobian").prover().holds
    H = torch.randn(4, 5, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    derived = transformer.ln_jacobian_rows(H, torch.ones(5, dtype=torch.float64))
    assert not torch.allclose(derived, transformer._rows_jacobian(LayerNorm(5), H), atol=1e-6)


def test_the_concrete_layernorm_reads_its_jacobian_off_the_program(broken_layernorm_rule):
    """derive.layernorm.LayerNorm is a view: with the program's rule broken its jacobian() follows the program
    (and no longer matches SymPy's derivative of the forward values), and derive() refutes the closed form.
    The old class computed the hand-typed closed form, which no broken rule could reach."""
    from seqgrad.derive import layernorm

    ln = layernorm.LayerNorm(3, eps=sp.Rational(1, 10 ** 5))
    point = dict(zip(ln.h + ln.gamma + ln.beta, [sp.Rational(k, 7) for k in (3, -5, 2, 9, 4, -8, 1, 2, 3)]))
    diff = (ln.jacobian() - ln.jacobian_direct()).xreplace(point).evalf()
    assert max(abs(e) for e in diff) > 1e-3
    assert not ln.derive().holds


def test_the_concrete_layernorm_reads_its_forward_values_off_the_program(monkeypatch):
    """Its y, xhat and s are the one definition's forward lines: a changed LayerNorm registered as "layernorm" (its
    lines with eps doubled) reaches them, so the class holds no forward formula of its own."""
    from seqgrad.derive import layernorm

    doubled = lambda prog, X, inputs, tag="", eps=rules.EPS: blocks.LAYERNORM.lines(prog, X, inputs, tag, 2 * eps)
    monkeypatch.setitem(blocks.NORMS, "layernorm", blocks.Norm("layernorm", doubled))
    h = sp.symbols("a b c", real=True)
    ln = layernorm.LayerNorm(3, h=h, gamma=[1] * 3, beta=[0] * 3)
    assert ln.y == blocks.norm_row(blocks.LAYERNORM, h, eps=2 * rules.EPS) != blocks.norm_row(blocks.LAYERNORM, h)
    assert ln.xhat == list(ln.y) and ln.s.has(2 * rules.EPS)


def test_the_concrete_layernorm_agrees_with_torch_and_its_closed_form():
    import torch

    from seqgrad.derive import layernorm

    ln = layernorm.LayerNorm(4, eps=1e-5)
    assert ln.derive().holds
    g = torch.Generator().manual_seed(5)
    h, gamma, beta = (torch.randn(4, generator=g, dtype=torch.float64) for _ in range(3))
    point = dict(zip(ln.h + ln.gamma + ln.beta, [float(v) for v in torch.cat([h, gamma, beta])]))
    mod = torch.nn.LayerNorm(4, eps=1e-5, dtype=torch.float64)
    with torch.no_grad():
        mod.weight.copy_(gamma)
        mod.bias.copy_(beta)
    J = torch.tensor([[float(e) for e in row] for row in ln.jacobian().xreplace(point).evalf().tolist()], dtype=torch.float64)
    assert torch.allclose(J, torch.autograd.functional.jacobian(mod, h), atol=1e-12, rtol=0)
    y = torch.tensor([float(e) for e in ln.y.xreplace(point).evalf()], dtype=torch.float64)
    assert torch.allclose(y, mod(h).detach(), atol=1e-12, rtol=0)


def test_the_jacobian_check_agrees_with_autograd_through_the_program():
    from seqgrad.crosscheck.checks import transformer
    from seqgrad.numeric.layernorm import LayerNorm

    g = torch.Generator().manual_seed(2)
    gamma = 1 + torch.randn(5, generator=g, dtype=torch.float64)
    H = 2 * torch.randn(6, 5, generator=g, dtype=torch.float64)
    ln = LayerNorm(5, gamma=gamma, beta=torch.randn(5, generator=g, dtype=torch.float64))
    assert torch.allclose(transformer.ln_jacobian_rows(H, gamma), transformer._rows_jacobian(ln, H), atol=1e-12, rtol=0)


def test_no_check_compiles_the_hand_typed_layernorm():
    """crosscheck never builds derive.layernorm.LayerNorm (the concrete-size closed form): its checks read the
    program of derive.blocks; the closed form lives on only as the catalogue statement proved equal to it."""
    import ast
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[1] / "crosscheck"
    offenders = []
    for path in root.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        aliases = {a.asname or a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                   and (node.module or "").endswith("derive") for a in node.names if a.name == "layernorm"}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("derive.layernorm"):
                offenders += [f"{path.name}: imports {a.name}" for a in node.names if a.name == "LayerNorm"]
            if isinstance(node, ast.Attribute) and node.attr == "LayerNorm" and isinstance(node.value, ast.Name) \
                    and node.value.id in aliases:
                offenders.append(f"{path.name}:{node.lineno}: {node.value.id}.LayerNorm")
    assert not offenders, offenders


def test_no_backend_implements_a_normalisation_of_its_own():
    """LayerNorm's and RMSNorm's row maps have one numeric definition, ``definition()`` in derive.rules: the code
    printers and the evaluator of ``seqgrad diff`` hold no std/normalize/rms implementation of their own."""
    from seqgrad.crosscheck import code_printer, lambdify, matcalc as c_matcalc
    from seqgrad.derive import matcalc

    for namespace in (lambdify._numpy_namespace(), lambdify._torch_namespace()):
        assert not {"_rowstd", "_normalize", "_rms", "_rmsnormalize"} & set(namespace)
    for ops in (matcalc._NumpyOps(), c_matcalc.torch_ops()):
        assert not any(hasattr(ops, name) for name in ("rowstd", "normalize", "rms", "rmsnormalize"))
    printer = code_printer._Printer({})
    assert not any(hasattr(printer, f"_print_{c.__name__}") for c in (rules.RowStd, rules.Normalize, rules.RowRMS, rules.RMSNormalize))


def test_concrete_attention_heads_are_views_of_the_attention_programs(monkeypatch):
    """SelfAttention and the decoder's CrossAttention take Q, K, V, S, A, O from the programs' forward lines
    (BlockProgram.forward_at), not from a second, hand-typed forward pass; the values are the text's."""
    from seqgrad.derive import attention, decoder

    calls = []
    original = blocks.BlockProgram.forward_at

    def spy(self, values, names):
        calls.append(self.program.name)
        return original(self, values, names)

    monkeypatch.setattr(blocks.BlockProgram, "forward_at", spy)
    head = attention.SelfAttention(3, 2, 2, 1, mask=attention.causal_mask(3))
    cross = decoder.CrossAttention(2, 3, 2, 1)
    assert calls == ["attention", "cross-attention"]
    assert head.A[0, 1] == 0 and sp.simplify(sum(head.A.row(1)) - 1) == 0  # the causal mask: exactly 0, rows sum to 1
    assert head.O == head.A * (head.X * head.W_V.T) and cross.S == cross.X * cross.W_Q.T * (cross.Z * cross.W_K.T).T / sp.sqrt(1)


@pytest.mark.parametrize("name", ["layernorm", "rmsnorm"])
@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_the_vector_language_norms_are_the_blocks_rows(name, n):
    """Parsing ``layernorm((v0, ..), eps)`` and ``rmsnorm(...)`` gives, entry by entry, the one definition's
    forward lines (derive.blocks.norm_row at gain 1 and shift 0) for a symbolic row and a symbolic eps."""
    from seqgrad.derive import blocks, safe_parse

    row = list(sp.symbols(f"v0:{n}", real=True))
    eps = sp.Symbol("eps", real=True)
    names = [str(v) for v in row]
    parsed = safe_parse.parse_value(f"{name}(({', '.join(names)},), eps)", variables=names + ["eps"])
    defined = blocks.norm_row(name, [sp.Symbol(v, real=True) for v in names], {"gamma": 1, "beta": 0}, eps)
    assert isinstance(parsed, tuple) and len(parsed) == len(defined) == n
    for a, b in zip(parsed, defined):
        assert sp.simplify(sp.radsimp(a - b)) == 0, (name, n, a, b)


@pytest.mark.parametrize("name,scale,node", [("layernorm", "std", "Normalize"), ("rmsnorm", "rms", "RMSNormalize")])
def test_the_vector_language_reads_the_norm_from_its_one_definition(name, scale, node, monkeypatch):
    """The parser states no norm of its own: with the row's scale defined otherwise in derive.norm_rows (here
    its eps doubled), ``layernorm(...)`` / ``rmsnorm(...)`` parse to the rule table's entries of that definition."""
    from seqgrad.derive import norm_rows, rules, safe_parse

    text, row, eps = f"{name}((1, 2, 4), 1/10)", sp.ImmutableMatrix([[1, 2, 4]]), sp.Rational(1, 10)
    before = safe_parse.parse_value(text)
    assert before == tuple(getattr(rules, node)(row, eps)[0, j] for j in range(3))
    original = getattr(norm_rows, scale)
    monkeypatch.setattr(norm_rows, scale, lambda x, n, total, eps, *root: original(x, n, total, 2 * eps, *root))
    after = safe_parse.parse_value(text)
    assert after == tuple(getattr(rules, node)(row, eps)[0, j] for j in range(3))
    assert all(sp.simplify(a - b) != 0 for a, b in zip(before, after))


@pytest.mark.parametrize("name,radicand", [("layernorm", "variance"), ("rmsnorm", "mean_square")])
def test_the_certified_evaluator_reads_the_norm_from_its_one_definition(name, radicand, monkeypatch):
    """``seqgrad claim`` states no norm of its own either: its exact value of ``layernorm(...)`` / ``rmsnorm(...)``
    is the rule table's entry, and follows a changed definition in derive.norm_rows (here the radicand's eps doubled)."""
    from seqgrad.derive import norm_rows, rules
    from seqgrad.derive.claims import parse_claim

    row, eps = sp.ImmutableMatrix([[0, 3, 4]]), sp.Rational(11, 100)
    node = {"layernorm": rules.Normalize, "rmsnorm": rules.RMSNormalize}[name]

    def certified():  # the exact values the evaluator finds, each an mpmath interval of the entry
        verdicts = parse_claim(f"{name}((0, 3, 4), 0.11) = (0, 0, 0)").verify().entries
        return [float(getattr(v.value, "mid", v.value)) for v in verdicts]  # an interval's midpoint, or a Fraction

    def entries(eps):
        return [float(node(row, eps)[0, j]) for j in range(3)]

    entries_before = entries(eps)
    assert certified() == pytest.approx(entries_before, rel=1e-12)
    doubled = entries(2 * eps)  # (before the change below, which the rule table's entries read too)
    original = getattr(norm_rows, radicand)
    monkeypatch.setattr(norm_rows, radicand, lambda x, n, total, eps: original(x, n, total, 2 * eps))
    assert certified() == pytest.approx(doubled, rel=1e-12) and doubled != pytest.approx(entries_before, rel=1e-6)
