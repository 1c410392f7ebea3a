"""One IR for the compiled code: statements over SymPy expressions, and a loop node holding the step program.

A compiled function is a :class:`Function`: its arguments and a list of statements.  The statements name
SymPy symbols and hold SymPy expressions (never printed text): :class:`Assign` (``target := value``), the
stacks of a sequence (:class:`Stack`, :class:`Stash`, :class:`Load`, :class:`Store`, :class:`PrevStack`,
:class:`Collect`), the products over a stacked axis (:class:`Stacked`: ``sum_t a_t^T b_t``, ``sum_t a_t``),
a gradient summed step by step (:class:`Accumulate`) and :class:`Loop` ``(index, body, reversed, length,
start)``, over the sequence's steps or a fixed range.
The straight-line program of :func:`crosscheck.lambdify.lambdify` is a Function without a loop
(:func:`straight_line`); a cell's loop over t is one with two (:func:`cell_loop`, built from the general-t
derivation :meth:`derive.cell.Cell.general`); an index formula of :mod:`derive.conv` is one with a loop per
looped index variable (:func:`crosscheck.conv_compile.conv_function`), holding a strided read per factor
(:class:`Strided`, zero outside the array; a strided convolution's upstream G dilated first, :class:`Dilate`)
and one :class:`Contract` that adds their product, summed over the vectorised axes, into an :class:`Output`.  Rewrites are passes from IR to IR: :func:`hoist` moves what is
not sequential out of the loops, and :func:`crosscheck.cell_loop.fuse_gates` rewrites the hoisted loops of a
cell of gate form (its layout read off the IR by :func:`crosscheck.cell_loop.gate_layout`) in the gate layout,
with the statements of a fused loop: :class:`Alloc` (a stack or step buffer taken from the call's workspace
before the loops), :class:`Temporaries` (where the writes' temporaries are taken), :class:`Call` (a helper of
the layout: the stacked gate products, the batched recurrent product), :class:`View` (a step of a stack, a
gate of a block), :class:`Reshape`, :class:`Write` (an elementwise expression written with ``out=`` into its
buffer, :mod:`crosscheck.buffered`) and :class:`Swap`.  :class:`Emitter`, the one emitter, prints every
Function (straight-line, plain loop, fused loop) as Python source for one backend; numpy and torch differ only
in the namespace the names are bound to, and an operation with no implementation in the backend is refused
when the source is printed, naming the operation and the backend.

>>> from seqgrad.derive.cell import Cell
>>> cell = Cell("z = w_x*x + w_h*h_prev; h = tanh(z)", states="h", params="w_x w_h w_o", head="w_o*h")
>>> fn = hoist(cell_loop(cell, cell.general()))
>>> [type(s).__name__ for s in fn.body if not isinstance(s, (Zeros, Stash, Stack, Reset))]
['Sequence', 'Assign', 'Assign', 'Loop', 'Loop', 'PrevStack', 'Stacked', 'Stacked', 'Assign', 'Return']
>>> before = fn.body[:fn.body.index(fn.loops()[0])]
>>> [(fn.names[s.target], str(s.value)) for s in before if isinstance(s, Assign)]  # x_t w_x of every t, before the loop
[('L', '0.0'), ('xproj_1_all', 'X*w_x')]
>>> forward, backward = fn.loops()
>>> z_t = next(s for s in forward.body if isinstance(s, Assign))
>>> sorted(Emitter("numpy", fn.names).code(z_t.value).strip("()").split(" + "))  # the step reads its slice
['w_h*h_prev', 'xproj_1']
>>> [(fn.names[s.target], s.kind) for s in fn.body if isinstance(s, Stacked)]  # sum_t g_t^z x_t, g_t^z h_{t-1}
[('d_w_x', 'outer'), ('d_w_h', 'outer')]
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import sympy as sp

from seqgrad.derive.sequence import t

from . import buffered
from .code_printer import _Code, _Printer, _TorchPrinter, identifier

__all__ = ["Function", "Assign", "Zeros", "Reset", "Stash", "Stack", "Load", "LoadPrev", "Store", "PrevStack",
           "Collect", "Stacked", "Accumulate", "Loss", "Rho", "Sequence", "Finite", "BatchOf", "Return", "Loop",
           "Alloc", "Temporaries", "Call", "View", "Reshape", "Write", "Swap", "Output", "Strided", "Dilate", "Contract",
           "straight_line", "cell_loop", "gradient_terms", "hoist", "Emitter"]


# -- statements ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Assign:
    """``target := value`` (a SymPy expression of symbols assigned before)."""
    target: sp.Basic
    value: sp.Basic


@dataclass(frozen=True)
class Zeros:
    """``target := 0`` of one row per sequence and ``width`` columns (``batch``), or of the parameter's ``shape``."""
    target: sp.Basic
    width: int | None = None
    shape: tuple | None = None  # not per sequence: () a number, (r, c) a matrix


@dataclass(frozen=True)
class Reset:
    """``target := nothing yet`` (what a later step has not sent)."""
    target: sp.Basic


@dataclass(frozen=True)
class Stash:
    """One slot per step (filled by :class:`Store`, read by :class:`Load`)."""
    target: sp.Basic


@dataclass(frozen=True)
class Stack:
    """A (B, T, width) array of the steps (width None: a scalar cell's (B, T))."""
    target: sp.Basic
    width: int | None


@dataclass(frozen=True)
class Load:
    """``target := source at the loop index`` (``array``: a (B, T, ...) array; else a stash)."""
    target: sp.Basic
    source: sp.Basic
    array: bool = False


@dataclass(frozen=True)
class LoadPrev:
    """``target := source at the index - 1``, zero at the first step (a state's s_{t-1} from its stash);
    ``state`` the state's name."""
    target: sp.Basic
    source: sp.Basic
    width: int | None
    state: str | None = None


@dataclass(frozen=True)
class Store:
    """``stack at the loop index := value`` (``array``: a :class:`Stack`; else a :class:`Stash`)."""
    stack: sp.Basic
    value: sp.Basic
    array: bool = False


@dataclass(frozen=True)
class PrevStack:
    """``target :=`` the stash ``source`` shifted by one step, zero first: s_{t-1} of every t as one array."""
    target: sp.Basic
    source: sp.Basic
    width: int | None


@dataclass(frozen=True)
class Collect:
    """``target :=`` the slots of a stash as one (B, T, ...) array."""
    target: sp.Basic
    source: sp.Basic


@dataclass(frozen=True)
class Stacked:
    """``target += sum_t a_t^T b_t`` (``outer``; a scalar cell's ``sum_t a_t b_t``) or ``sum_t a_t`` (``sum``),
    one product or sum of the stacks ``a``, ``b`` over the (B, T) axes."""
    target: sp.Basic
    kind: str
    a: sp.Basic
    b: sp.Basic | None
    vector: bool


@dataclass(frozen=True)
class Accumulate:
    """``target += value`` summed down to ``shape`` (over the batch), inside a loop; ``guard``: only at a
    step where that symbol is set (a loss position); ``allocates``: what to say in a comment when a loop that
    otherwise allocates nothing makes a new array here (:attr:`crosscheck.cells.CellFunction.fallbacks`)."""
    target: sp.Basic
    value: sp.Basic
    shape: tuple
    guard: sp.Basic | None = None
    allocates: str | None = None


@dataclass(frozen=True)
class Loss:
    """At a loss position: yhat_t, the loss term added to L, and e_t stored (:func:`cell_source.emit_loss`)."""
    gen: object
    cell: object
    y_t: sp.Basic


@dataclass(frozen=True)
class Rho:
    """rho_s := what the next step sent to s_t (zero at the last) + the loss's direct term (:func:`cell_source.emit_rho`)."""
    gen: object
    cell: object
    carry: tuple  # (state, carry symbol, width)
    reset: bool = True  # the carry is nothing yet (Reset) before the last step sends; else it starts at zero


@dataclass(frozen=True)
class Sequence:
    """``_B, _T :=`` the batch and length of the sequence argument ``X``."""
    X: sp.Basic


@dataclass(frozen=True)
class Finite:
    """Every argument is finite (else :class:`~seqgrad.errors.NonFiniteError` naming it)."""
    args: tuple


@dataclass(frozen=True)
class BatchOf:
    """``_B :=`` the number of rows of the first row argument that has a batch."""
    rows: tuple


@dataclass(frozen=True)
class Return:
    """The function's results; those at the indices in ``reduce`` are summed over the batch to their shape."""
    values: tuple
    reduce: frozenset = frozenset()


@dataclass(frozen=True)
class Output:
    """``target :=`` zeros of ``shape``, after a leading batch axis when ``batch`` (as long as the longest
    leading axis of the arrays ``like``, an array without a batch entering with an axis of 1), of their dtype
    and device."""
    target: sp.Basic
    like: tuple
    shape: tuple
    batch: bool


@dataclass(frozen=True)
class Strided:
    """``target :=`` a strided slice of the array ``source`` (a leading batch axis, then one axis per entry of
    ``reads``): per axis ``(first, step, count)``, the entries first, first + step, ... (count of them; step 0:
    the entry first alone, its axis dropped), zero where an entry falls outside the array (zero padding).
    ``first`` is a SymPy expression of the enclosing loops' indices."""
    target: sp.Basic
    source: sp.Basic
    reads: tuple


@dataclass(frozen=True)
class Dilate:
    """``target :=`` the array ``source`` dilated by ``stride`` after its batch axis: entry ``stride * o`` (per
    axis) is ``source[o]``, ``stride - 1`` zeros between two entries (a strided gradient's upstream G)."""
    target: sp.Basic
    source: sp.Basic
    stride: int


@dataclass(frozen=True)
class Contract:
    """``target[at] += scale * einsum(spec, *factors)``: the product of the ``factors`` (strided slices whose
    axes ``spec`` names in Einstein's notation), summed over every axis the result does not keep; ``at`` has
    one entry per axis of ``target`` (after its batch when ``batch``): a loop index, or None for the whole
    axis.  Without factors it adds ``scale`` alone."""
    target: sp.Basic
    factors: tuple
    spec: str
    scale: sp.Basic
    at: tuple
    batch: bool


@dataclass(frozen=True)
class Loop:
    """``for index in range(start, start + length)`` (``reversed``: from the last down to start), the step
    program ``body``; ``length`` None: the sequence's length ``_T`` (:class:`Sequence`)."""
    index: sp.Symbol
    body: tuple
    reversed: bool = False
    length: int | None = None
    start: int = 0


# -- the statements of a fused loop (crosscheck.cell_loop.fuse_gates) -------------------------------------------
@dataclass(frozen=True)
class Alloc:
    """``target :=`` an array of ``shape`` taken from the workspace of the call (kept for the next call of the
    same shapes, :class:`crosscheck.cell_loop.Workspace`), of ``like``'s dtype and device: ``empty`` (written
    before it is read), ``states`` (a stack of states, s_{-1} = 0 first) or ``rows`` (a (gates, B, W) block laid
    out like a run of gates' views of the gate stack)."""
    target: sp.Basic
    shape: tuple
    like: sp.Basic
    kind: str = "empty"
    note: str = ""


@dataclass(frozen=True)
class Temporaries:
    """Where the step buffers that the :class:`Write` statements take (and the invariants they read) are
    allocated, once, before the loops."""
    like: sp.Basic


@dataclass(frozen=True)
class Call:
    """``targets := helper(args)`` (no targets: in place), a helper of a fused layout
    (:func:`crosscheck.cell_loop.helpers`: the gate stacks, their batched products, in-place activations);
    ``args`` are symbols, numbers, sizes (SymPy integers of ``_B``, ``_T``), tuples and lists of them."""
    targets: tuple
    helper: str
    args: tuple
    note: str = ""


@dataclass(frozen=True)
class View:
    """``target := source[at]`` without a copy: a step of a stack, a gate of a step's block (``at``: an index,
    a SymPy expression of the loop index, or a slice)."""
    target: sp.Basic
    source: sp.Basic
    at: object


@dataclass(frozen=True)
class Reshape:
    """``target := source`` read with the axes ``shape`` (a view: the (G, T, B, H) gate stack as (G, T B, H))."""
    target: sp.Basic
    source: sp.Basic
    shape: tuple


@dataclass(frozen=True)
class Write:
    """``target := value`` (``add``: ``target += value``) elementwise, into the array ``target`` of ``shape``
    (a step buffer, a slot of a stack), each operation of ``value`` a call that names its output and its
    temporaries taken from the :class:`Temporaries` (:mod:`crosscheck.buffered`): no new array."""
    target: sp.Basic
    value: sp.Basic
    shape: tuple
    add: bool = False


@dataclass(frozen=True)
class Swap:
    """``left := right`` at once (``carry, next = next, carry``: what this step sent becomes what the next reads)."""
    left: tuple
    right: tuple


@dataclass
class Function:
    """A compiled function: ``args``, ``body``; ``names`` the identifier of every symbol it names (passes add
    theirs through :meth:`fresh`); ``invariants`` the arguments that do not change from step to step."""
    name: str
    args: tuple
    body: list
    names: dict
    taken: set = field(default_factory=set)
    invariants: frozenset = frozenset()

    def fresh(self, text: str, like=None):
        """A new symbol of ``like``'s shape (a scalar without), its identifier made from ``text``; a Dummy, so
        it can never equal a symbol of the derivation (a user's ``L`` or ``e_all``)."""
        ident = identifier(text, self.taken)
        name = sp.Dummy(ident)
        sym = sp.MatrixSymbol(name, *like.shape) if isinstance(like, sp.MatrixExpr) else name
        self.names[sym] = ident
        return sym

    def internal(self, text: str, shape=None):
        """A new symbol (a matrix of ``shape`` if given) with the engine's own identifier ``text``: an underscore
        name, which :func:`~crosscheck.code_printer.identifier` never gives a symbol of the derivation."""
        assert text.startswith("_") and text not in self.names.values(), text
        sym = sp.MatrixSymbol(sp.Dummy(text), *shape) if shape else sp.Dummy(text)
        self.names[sym] = text
        return sym

    def view(self, source, at, shape=None) -> View:
        """The :class:`View` ``target := source[at]`` of a new internal symbol (a matrix of ``shape`` if given),
        named after its source: the statement that binds it goes before the statements that read it."""
        used, k = set(self.names.values()), 0
        while f"{self.names[source]}_{k}" in used:
            k += 1
        return View(self.internal(f"{self.names[source]}_{k}", shape), source, at)

    def loops(self):
        return [s for s in self.body if isinstance(s, Loop)]


def _index(at) -> str:
    if isinstance(at, slice):
        return f"{'' if at.start is None else at.start}:{'' if at.stop is None else at.stop}"
    return str(at)


# -- builders ------------------------------------------------------------------------------------------------
def straight_line(name, args, names, taken, definitions, outputs, rows, reduce=(), check_finite=True) -> Function:
    """The IR of a program's ``definitions`` evaluated in order, returning ``outputs`` (no loop)."""
    body: list = [Finite(tuple(args))] if check_finite else []
    body.append(BatchOf(tuple(rows)))
    body += [Assign(d.target, d.value) for d in definitions]
    body.append(Return(tuple(outputs), frozenset(reduce)))
    return Function(name, tuple(args), body, names, taken)


def cell_loop(cell, gen) -> Function:
    """The IR of a cell's loss and gradients as two loops over t, read off the general-t derivation: every
    step definition in the forward loop, every adjoint in the reversed one, each parameter's gradient
    summed step by step, dL/dx_t stored per step (before :func:`hoist`)."""
    from .cell_source import param_key, shape_of, step_names

    names, _, y_t = step_names(cell, gen)
    taken = set(names.values())
    params = [gen.params[p] for p in cell.param_shapes]
    x, vector = gen.x, cell.vector
    X = sp.MatrixSymbol("X", *x.shape) if vector else sp.Symbol("X")
    names[X] = "X"
    taken.add("X")
    targets = [sp.Symbol(n) for n in ("Y", "_index", "_npos")]  # the targets, the loss positions' slots and count
    names.update({a: a.name for a in targets})
    fn = Function(f"{cell.name}_loop", tuple(params) + (X, *targets), [], names, taken, frozenset(params))
    H = {s: (cell.shape_of(s)[1] if vector else None) for s in cell.states}
    forward = gen.step.definitions("forward")
    stash = {d.target: fn.fresh(f"{names[d.target]}_all") for d in forward}
    e_all, L = fn.fresh("e_all"), fn.fresh("L")
    body = fn.body
    body.append(Sequence(X))
    body += [Zeros(prev, H[s]) for s, prev in gen.prev.items()]
    body.append(Assign(L, sp.Float(0.0)))
    body += [Stash(a) for a in stash.values()] + [Stash(e_all)]
    step = [Load(x, X, array=True)]
    for d in forward:
        step += [Assign(d.target, d.value), Store(stash[d.target], d.target)]
    step.append(Loss(gen, cell, y_t))
    step += [Assign(prev, gen.at_t[s]) for s, prev in gen.prev.items()]
    body.append(Loop(t, tuple(step)))
    grads = {p: fn.fresh(f"d_{names[p]}", p) for p in params}
    body += [Zeros(grads[p], shape=shape_of(p)) for p in params]
    carry = {s: fn.fresh(f"carry_{s}") for s in cell.states}
    body += [Reset(c) for c in carry.values()]
    dX = fn.fresh("dX")
    body.append(Stash(dX))
    step = [Load(x, X, array=True)] + [Load(d.target, stash[d.target]) for d in forward]
    step += [LoadPrev(prev, stash[gen.at_t[s]], H[s], s) for s, prev in gen.prev.items()]
    step += [Load(gen.e, e_all), Rho(gen, cell, tuple((s, carry[s], H[s]) for s in cell.states))]
    step += [Assign(d.target, d.value) for d in gen.backward_defs]
    step += gradient_terms(gen, params, grads)
    dx = gen.input_grad if gen.input_grad is not None else (sp.MatMul if vector else sp.Mul)(sp.Float(0.0), x, evaluate=False)
    step.append(Store(dX, dx))
    for s in cell.states:
        c = gen.carry[s]
        step.append(Assign(carry[s], c) if c is not None else Reset(carry[s]))
    body.append(Loop(t, tuple(step), reversed=True))
    dX_all = fn.fresh("dX_all")
    body.append(Collect(dX_all, dX))
    body.append(Return((L,) + tuple(grads[p] for p in params) + (dX_all,)))
    return fn


def gradient_terms(gen, params, grads) -> list:
    """Each parameter's step term and head term (at a loss position) summed into ``grads[p]`` inside a loop."""
    from .cell_source import param_key, shape_of

    out = []
    for p in params:
        contrib, head = gen.step_grads[param_key(gen, p)], gen.head_grads[param_key(gen, p)]
        if contrib is not None:
            out.append(Accumulate(grads[p], contrib, shape_of(p)))
        if head is not None:
            out.append(Accumulate(grads[p], head, shape_of(p), guard=gen.e))
    return out


# -- passes --------------------------------------------------------------------------------------------------
def _symbols(expr) -> set:
    return {s for s in getattr(expr, "free_symbols", ()) if isinstance(s, (sp.Symbol, sp.MatrixSymbol))}


def _terms(value):
    return value.args if isinstance(value, (sp.Add, sp.MatAdd)) else (value,)


def hoist(fn: Function) -> Function:
    """What is not sequential leaves the loops: in a forward loop, every term of an assignment that reads a
    step of an argument array and otherwise only invariants (the input projection ``x_t W_x^T``) becomes one
    product of the whole array before the loop; in a reversed loop, a gradient whose step term is
    ``(g_t)^T v_t`` or ``g_t`` (g assigned in the loop, v a step of an array or a state's s_{t-1}) becomes one
    product (or sum) of the stacked steps after it, and a per-step result of adjoints and invariants only
    (dL/dx_t = g_t^z W_x) one product of the stacked adjoints, replacing the stash's :class:`Collect`."""
    body, results = [], {}
    for s in fn.body:
        if isinstance(s, Loop):
            lines, found = (_defer(fn, s) if s.reversed else (_hoist_inputs(fn, s), {}))
            body += lines
            results.update(found)
        elif isinstance(s, Collect) and s.source in results:
            body.append(Assign(s.target, results[s.source]))
        else:
            body.append(s)
    return replace(fn, body=body)


def _hoist_inputs(fn: Function, loop: Loop) -> list:
    arrays = {s.target: s.source for s in loop.body if isinstance(s, Load) and s.array}
    before, loads, step = [], [], []
    for s in loop.body:
        if not isinstance(s, Assign):
            step.append(s)
            continue
        vector = isinstance(s.value, sp.MatrixExpr)
        terms, keep = _terms(s.value), []
        for term in terms:
            free = _symbols(term)
            if free & set(arrays) and free <= set(arrays) | fn.invariants and (isinstance(term, sp.MatMul) or not vector):
                n = sum(isinstance(b, Assign) for b in before) + 1
                whole = fn.fresh(f"xproj_{n}_all", term)
                part = fn.fresh(f"xproj_{n}", term)
                before.append(Assign(whole, term.xreplace(arrays)))
                loads.append(Load(part, whole, array=True))
                keep.append(part)
            else:
                keep.append(term)
        if any(a is not b for a, b in zip(keep, terms)):
            s = Assign(s.target, ((sp.MatAdd if vector else sp.Add)(*keep)) if len(keep) > 1 else keep[0])
        step.append(s)
    first = next(i for i, s in enumerate(step) if not isinstance(s, Load))
    return before + [replace(loop, body=tuple(step[:first] + loads + step[first:]))]


def _outer_form(contrib, adjoints, stackable):
    """("outer", g, v) for a step term ``g^T v`` (vector) or ``g v`` (scalar) of an adjoint g and a stackable
    v; ("sum", g, None) for a term ``g``; None: it stays in the loop."""
    if contrib in adjoints:
        return ("sum", contrib, None)
    if isinstance(contrib, sp.MatMul) and len(contrib.args) == 2 and isinstance(contrib.args[0], sp.Transpose):
        a, b = contrib.args[0].arg, contrib.args[1]
        if a in adjoints and b in stackable:
            return ("outer", a, b)
    if not isinstance(contrib, sp.MatrixExpr) and contrib.is_Mul and len(contrib.args) == 2:
        a, b = contrib.args
        if b in adjoints:
            a, b = b, a
        if a in adjoints and b in stackable:
            return ("outer", a, b)
    return None


def _defer(fn: Function, loop: Loop) -> list:
    adjoints = {s.target for s in loop.body if isinstance(s, Assign) and s.target not in _carries(loop)}
    stackable = {s.target: s.source for s in loop.body if isinstance(s, Load) and s.array}
    prevs = {s.target: s for s in loop.body if isinstance(s, LoadPrev)}
    deferred, stacked = [], set()
    for s in loop.body:
        if isinstance(s, Accumulate) and s.guard is None:
            form = _outer_form(s.value, adjoints, set(stackable) | set(prevs))
            if form is not None:
                deferred.append((s, form))
                stacked.add(form[1])
    moved = []  # per-step results of adjoints and invariants: (store, the collect after the loop)
    for s in loop.body:
        free = _symbols(s.value) if isinstance(s, Store) and not s.array else set()
        if free & adjoints and free <= adjoints | fn.invariants:
            moved.append(s)
            stacked |= _symbols(s.value) & adjoints
    stack_of = {a: fn.fresh(f"{fn.names[a]}_stack", a) for a in sorted(stacked, key=str)}
    width = {a: (int(a.shape[1]) if isinstance(a, sp.MatrixExpr) else None) for a in stack_of}
    dropped = {id(s) for s, _ in deferred} | {id(s) for s in moved}
    step = []
    for s in loop.body:
        if id(s) not in dropped:
            step.append(s)
        if isinstance(s, Assign) and s.target in stack_of:
            step.append(Store(stack_of[s.target], s.target, array=True))
    after, prev_stack = [], {}
    for s, (kind, a, b) in deferred:
        if b in prevs and b not in prev_stack:
            prev_stack[b] = fn.fresh(f"{fn.names[b]}_stack", b)
            after.append(PrevStack(prev_stack[b], prevs[b].source, prevs[b].width))
    for s, (kind, a, b) in deferred:
        right = prev_stack.get(b, stackable.get(b))
        after.append(Stacked(s.target, kind, stack_of[a], right, isinstance(a, sp.MatrixExpr)))
    out = [Stack(stack_of[a], width[a]) for a in stack_of] + [replace(loop, body=tuple(step))] + after
    return out, {s.stack: s.value.xreplace(stack_of) for s in moved}


def _carries(loop: Loop) -> set:
    """The carry symbols of a reversed loop (read by its :class:`Rho`): what a step sends to the next, not an adjoint."""
    return {c for s in loop.body if isinstance(s, Rho) for _, c, _ in s.carry}


# -- the emitter ---------------------------------------------------------------------------------------------
class Emitter:
    """Python source of a :class:`Function` for one backend (``numpy``, ``torch``): the same text for both but
    for the operations, each ``_op_NAME`` bound to the backend's implementation (:attr:`used`); one without an
    implementation in the backend is refused here, naming it and the backend."""

    def __init__(self, backend: str, names: dict):
        self.backend = backend
        self.printer = (_TorchPrinter if backend == "torch" else _Printer)(names)
        self.code = _Code(self.printer, backend)
        self.names = names
        self.index = None
        self.writer = None  # the Write statements' printer (crosscheck.buffered), made for the function printed
        self.temporaries = None  # (line, depth, like) of the Temporaries statement

    @property
    def used(self) -> dict:
        return self.printer.used

    def source(self, fn: Function, name: str = "_generated") -> str:
        from .cell_source import Source

        src = Source()
        self.writer = buffered.Writer(self.backend, self.names, self.code, fn.invariants)
        src(f"def {name}({', '.join(self.names[a] for a in fn.args)}):", 0)
        self._block(src, fn.body, 1)
        if self.temporaries is not None:  # the buffers the writes took, allocated where the IR says
            line, depth, like = self.temporaries
            src.lines[line:line] = ["    " * depth + text for text in self.writer.declarations(self._n(like))]
        return src.text()

    def _block(self, src, body, depth):
        for s in body:
            getattr(self, "_" + type(s).__name__)(src, s, depth)

    def _n(self, sym) -> str:
        return self.names[sym]

    def _Loop(self, src, s, depth):
        i = self.index = self.names.get(s.index, str(s.index))
        if s.length is None:
            src(f"for {i} in range(_T - 1, -1, -1):" if s.reversed else f"for {i} in range(_T):", depth)
        else:
            first, last = s.start, s.start + s.length - 1
            src(f"for {i} in range({last}, {first - 1}, -1):" if s.reversed else f"for {i} in range({first}, {last + 1}):", depth)
        self._block(src, s.body, depth + 1)

    def _Assign(self, src, s, depth):
        src(f"{self._n(s.target)} = {self.code(s.value)}", depth)

    def _Zeros(self, src, s, depth):
        if s.shape is None:
            value = f"_zeros(_B, {s.width})"
        else:
            value = "0.0" if not s.shape else f"_zeros({s.shape[0]}, {s.shape[1]}, batch=False)"
        src(f"{self._n(s.target)} = {value}", depth)

    def _Reset(self, src, s, depth):
        src(f"{self._n(s.target)} = None", depth)

    def _Stash(self, src, s, depth):
        src(f"{self._n(s.target)} = [None] * _T", depth)

    def _Stack(self, src, s, depth):
        src(f"{self._n(s.target)} = _empty(_B, _T, {s.width})", depth)

    def _Load(self, src, s, depth):
        at = f"[:, {self.index}]" if s.array else f"[{self.index}]"
        src(f"{self._n(s.target)} = {self._n(s.source)}{at}", depth)

    def _LoadPrev(self, src, s, depth):
        i = self.index
        src(f"{self._n(s.target)} = {self._n(s.source)}[{i} - 1] if {i} > 0 else _zeros(_B, {s.width})", depth)

    def _Store(self, src, s, depth):
        at = f"[:, {self.index}]" if s.array else f"[{self.index}]"
        src(f"{self._n(s.stack)}{at} = {self.code(s.value)}", depth)

    def _PrevStack(self, src, s, depth):
        src(f"{self._n(s.target)} = _prev_stack({self._n(s.source)}, _B, {s.width})", depth)

    def _Collect(self, src, s, depth):
        src(f"{self._n(s.target)} = _stack({self._n(s.source)})", depth)

    def _Stacked(self, src, s, depth):
        d = self._n(s.target)
        total = f"_outer({self._n(s.a)}, {self._n(s.b)})" if s.kind == "outer" else f"_total({self._n(s.a)}, {s.vector})"
        src(f"{d} = {d} + {total}", depth)

    def _Accumulate(self, src, s, depth):
        if s.allocates is not None:
            src(f"# allocates: {s.allocates}", depth)
        if s.guard is not None:
            src(f"if {self._n(s.guard)} is not None:", depth)
            depth += 1
        d = self._n(s.target)
        src(f"{d} = {d} + _acc({self.code(s.value)}, {s.shape!r})", depth)

    def _Loss(self, src, s, depth):
        from .cell_source import emit_loss

        emit_loss(src, self.code, self.names, s.gen, s.cell, s.y_t)

    def _Rho(self, src, s, depth):
        from .cell_source import emit_rho

        emit_rho(src, self.code, self.names, s.gen, s.cell, {st: self._n(c) for st, c, _ in s.carry},
                 {st: f"_zeros(_B, {w})" for st, _, w in s.carry} if s.reset else None)

    def _Output(self, src, s, depth):
        like = ", ".join(self._n(a) for a in s.like)
        src(f"{self._n(s.target)} = _output(({like},), {tuple(s.shape)!r}, {s.batch})", depth)

    def _Strided(self, src, s, depth):
        reads = ", ".join(f"({self.code(first)}, {step}, {count})" for first, step, count in s.reads)
        src(f"{self._n(s.target)} = _strided({self._n(s.source)}, ({reads},))", depth)

    def _Dilate(self, src, s, depth):
        src(f"{self._n(s.target)} = _dilate({self._n(s.source)}, {s.stride})", depth)

    def _Contract(self, src, s, depth):
        at = ([":"] if s.batch else []) + [":" if a is None else self._n(a) for a in s.at]
        target = f"{self._n(s.target)}[{', '.join(at) if at else '...'}]"
        value = f"_einsum({s.spec!r}, {', '.join(self._n(f) for f in s.factors)})" if s.factors else None
        if s.scale != 1 or value is None:
            scale = self.code(s.scale)
            value = scale if value is None else f"{scale}*{value}"
        src(f"{target} += {value}", depth)

    def _Sequence(self, src, s, depth):
        X = self._n(s.X)
        src(f"_B, _T = {X}.shape[0], {X}.shape[1]", depth)
        src(f"_like({X})", depth)

    def _Finite(self, src, s, depth):
        src(f"_finite({', '.join(self._n(a) for a in s.args)})", depth)

    def _BatchOf(self, src, s, depth):
        src(f"_B = _batch({', '.join(self._n(a) for a in s.rows)})", depth)

    def _Return(self, src, s, depth):
        outs = []
        for i, v in enumerate(s.values):
            text = self.code(v)
            if i in s.reduce:
                text = f"_reduce({text}, {tuple(v.shape) if isinstance(v, sp.MatrixExpr) else ()!r})"
            outs.append(text)
        src(f"return ({', '.join(outs)}{',' if len(outs) == 1 else ''})", depth)

    # -- the statements of a fused loop
    def _arg(self, a) -> str:
        if a is None:
            return "None"
        if isinstance(a, list):
            return "[" + ", ".join(self._arg(b) for b in a) + "]"
        if isinstance(a, tuple):
            return "(" + ", ".join(self._arg(b) for b in a) + ("," if len(a) == 1 else "") + ")"
        if isinstance(a, sp.Basic) and a in self.names:
            return self.names[a]
        return str(a)  # a number, or a size such as _T + 1

    def _shape(self, shape) -> str:
        return ", ".join(self._arg(n) for n in shape)

    @staticmethod
    def _note(text):
        return f"  # {text}" if text else ""

    _ALLOC = {"empty": "_empty_n", "states": "_states", "rows": "_run_rows"}

    def _Alloc(self, src, s, depth):
        src(f"{self._n(s.target)} = {self._ALLOC[s.kind]}({self._n(s.like)}, {self._shape(s.shape)}){self._note(s.note)}", depth)

    def _Temporaries(self, src, s, depth):
        self.temporaries = (len(src.lines), depth, s.like)

    def _Call(self, src, s, depth):
        call = f"{s.helper}({', '.join(self._arg(a) for a in s.args)})"
        targets = ", ".join(self._n(x) for x in s.targets)
        src((f"{targets} = {call}" if targets else call) + self._note(s.note), depth)

    def _View(self, src, s, depth):
        src(f"{self._n(s.target)} = {self._n(s.source)}[{_index(s.at)}]", depth)

    def _Reshape(self, src, s, depth):
        src(f"{self._n(s.target)} = {self._n(s.source)}.reshape({self._shape(s.shape)})", depth)

    def _Write(self, src, s, depth):
        out, shape = self._n(s.target), self._shape(s.shape)
        if not s.add:
            lines = self.writer.into(out, s.value, shape)
        else:
            lines, text, temp = self.writer.value(s.value, shape)
            lines = lines + [f"_k_add({out}, {text}, out={out})"]
            self.writer.done(temp, shape)
        for line in lines:
            src(line, depth)

    def _Swap(self, src, s, depth):
        src(f"{', '.join(self._n(a) for a in s.left)} = {', '.join(self._n(b) for b in s.right)}", depth)
