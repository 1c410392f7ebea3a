r"""Cells read from PyTorch code: ``torch.nn`` recurrent modules and your own step module.

:meth:`derive.cell.Cell.from_torch` (this module does the reading) turns

* ``nn.RNN``, ``nn.GRU``, ``nn.LSTM`` (any ``num_layers``, ``bias``, ``batch_first``) and ``nn.RNNCell``,
  ``nn.GRUCell``, ``nn.LSTMCell`` into their step equations in torch's conventions and with torch's gate
  names (GRU: r, z, n; LSTM: i, f, g, o; parameters ``W_ir``, ``b_hn``, ... as in torch's documentation,
  each a block of the module's ``weight_ih_l0``, ...);
* a step module of your own (``forward(x_t, h_prev) -> h_t``, or several states as separate arguments or
  one tuple, returning the new states) into step equations, by tracing one step with ``torch.fx``:
  ``nn.Linear``/``F.linear``, ``@`` with a parameter, ``+ - *``, division by a number, the activations of
  :data:`TORCH_ACTIVATIONS`, ``torch.cat``/``chunk``/``split``/column slices of gates;

and the result is a :class:`~derive.cell.Cell` like any other: general-t derivation, unrolled program,
transition Jacobian, LaTeX, the compiled loop, with the module's own weights as its parameter values
(``cell.torch.values()``).  :func:`crosscheck.torch_cells.against_autograd` checks every derived gradient
against the module's own autograd.

torch is imported here only inside the functions, when a torch module has been passed in: ``import
seqgrad.derive`` never imports it.  Nothing is ``eval``-ed: the module's code runs only under
``torch.fx`` (symbolically) and once on ``example`` (to read the shapes).
"""

from __future__ import annotations

import ast
import builtins
import linecache
import operator
import os
import sys
from dataclasses import dataclass, field, replace

import sympy as sp

from seqgrad.errors import SeqgradTypeError

from .cell_names import CellError, _names
from .operations import node as operation_node

__all__ = ["read_module", "TorchSource", "ParamRef", "TorchReadError", "TORCH_ACTIVATIONS"]

#: the one table: a torch activation (function, method or module, by name) -> the Cell's activation name.
#: Arguments that change the function are checked in :func:`_activation_name` (a leaky ReLU's slope 0.01,
#: softplus' beta 1; GELU: the exact (erf) form is the registry's ``gelu``, the tanh form ``gelu_tanh``).
TORCH_ACTIVATIONS = {
    "sigmoid": "sigmoid", "tanh": "tanh", "relu": "relu", "leaky_relu": "leaky_relu", "softplus": "softplus",
    "silu": "silu", "gelu": "gelu_tanh", "identity": "identity",
    "Sigmoid": "sigmoid", "Tanh": "tanh", "ReLU": "relu", "LeakyReLU": "leaky_relu", "Softplus": "softplus",
    "SiLU": "silu", "GELU": "gelu_tanh", "Identity": "identity",
}

_GATES = {"RNN_TANH": ("",), "RNN_RELU": ("",), "GRU": ("r", "z", "n"), "LSTM": ("i", "f", "g", "o")}


class TorchReadError(CellError):
    """A torch module that cannot be read into step equations: names the module, the operation and the line."""

    def __init__(self, module: str, op: str, allowed: str, where: str | None = None):
        self.module, self.op, self.where = module, op, where
        at = f" at {where}" if where else ""
        super().__init__("module", f"{module}: {op}{at}", allowed)
        self.args = (f"module {module}: {op}{at} is not allowed: {allowed}",)  # whole: the line is the point


@dataclass(frozen=True)
class ParamRef:
    """Where a cell parameter lives in torch: ``owner`` ("module" or "head"), the parameter's qualified
    name and shape, the block of it (``rows``, ``cols`` of the cell's out x in reading), ``transposed`` (a
    weight used as ``x @ W``: the cell's parameter is its transpose) or ``row`` (a vector used elementwise)."""

    owner: str
    qualname: str
    shape: tuple
    rows: tuple | None = None
    cols: tuple | None = None
    transposed: bool = False
    row: bool = False

    def __post_init__(self):
        if len(self.shape) == 1:
            object.__setattr__(self, "row", True)

    def _full(self) -> tuple:
        if self.row:
            return (1, self.shape[-1])
        return (self.shape[1], self.shape[0]) if self.transposed else tuple(self.shape)

    def block_shape(self) -> tuple:
        out, inp = self._full()
        r, c = self.rows or (0, out), self.cols or (0, inp)
        return (c[1] - c[0],) if self.row else (r[1] - r[0], c[1] - c[0])

    def sliced(self, rows=None, cols=None) -> "ParamRef":
        """The sub-block ``rows``/``cols`` of this block (a row's entries are its columns)."""
        if self.row:
            rows, cols = None, (cols if cols is not None else rows)
        out, inp = self._full()

        def narrow(old, new, full):
            lo = (old or (0, full))[0]
            return old if new is None else (lo + new[0], lo + new[1])

        return replace(self, rows=narrow(self.rows, rows, out), cols=narrow(self.cols, cols, inp))

    def index(self) -> tuple:
        """The slices of the stored torch tensor this block reads."""
        out, inp = self._full()
        r, c = slice(*(self.rows or (0, out))), slice(*(self.cols or (0, inp)))
        if self.row:
            return (c,) if len(self.shape) == 1 else (slice(None), c)
        return (c, r) if self.transposed else (r, c)

    def value(self, tensor):
        """This block of ``tensor`` as float64 numpy, stored out x in (or as a row)."""
        block = tensor.detach().to("cpu").double()[self.index()]
        return (block.T if self.transposed else block).reshape(self.block_shape()).numpy().copy()

    def place(self, full, grad) -> None:
        """Add ``grad`` (of this block, numpy) into ``full`` (numpy, the shape of the torch tensor)."""
        region = full[self.index()]
        g = grad.reshape(self.block_shape())
        full[self.index()] = region + (g.T if self.transposed else g).reshape(region.shape)


@dataclass
class TorchSource:
    """What a cell read from torch was read from: the module (and head, loss), how one step is called, and
    where each cell parameter lives (:class:`ParamRef`, keyed by the cell's parameter names)."""

    module: object
    kind: str  # "sequence" (nn.RNN/GRU/LSTM), "cell" (nn.*Cell) or "step" (a module of your own)
    states: list
    output: str  # the state the head reads
    refs: dict
    head: object = None
    loss: object = None
    batch_first: bool = True
    call: tuple = ()  # step modules: the forward's arguments after x ("s": one state, ("s", "s"): a tuple of states)
    returns_tuple: bool = False
    state_widths: dict = field(default_factory=dict)
    read: dict = field(default_factory=dict)  # the arguments of Cell.from_torch, to read it again with another head
    cell_class: type | None = None  # the class it was read into (Cell)

    def reread(self, module=None, **changes) -> "derive.cell.Cell":  # noqa: F821
        """The cell of ``module`` (default: this one) read with the same arguments but ``changes``."""
        return read_module(self.cell_class, module if module is not None else self.module, **{**self.read, **changes})

    def owners(self, module=None, head=None) -> dict:
        return {"module": module if module is not None else self.module, "head": head if head is not None else self.head}

    def tensor(self, ref: ParamRef, module=None, head=None):
        owner = self.owners(module, head)[ref.owner]
        params = dict(owner.named_parameters()) if hasattr(owner, "named_parameters") else {}
        if ref.qualname not in params:
            raise SeqgradTypeError(ref.owner, type(owner).__name__, f"a module with the parameter {ref.qualname!r} "
                                   f"(the one the cell was read from)")
        tensor = params[ref.qualname]
        if tuple(tensor.shape) != ref.shape:
            raise CellError(ref.owner, f"{ref.qualname} of shape {tuple(tensor.shape)}",
                            f"the shape {ref.shape} of the module the cell was read from")
        return tensor

    def values(self, module=None, head=None) -> dict:
        """The cell's parameter values (float64 numpy, by :attr:`Cell.parameter_names`) from the module's weights."""
        return {name: ref.value(self.tensor(ref, module, head)) for name, ref in self.refs.items()}


def read_module(cell_class: type, module, *, states=None, example=None, head=None, loss="squared", on="final",
                reduction="sum", batch="sum", name=None) -> "derive.cell.Cell":  # noqa: F821
    """See :meth:`derive.cell.Cell.from_torch` (``cell_class``: the class to build, ``Cell``)."""
    torch = _torch_of(module)
    nn = torch.nn
    label = name or type(module).__name__
    reader = _Reader(label)
    if isinstance(module, (nn.RNNBase, nn.RNNCellBase)):
        if states is not None or example is not None:
            raise TorchReadError(label, "states=/example= given", "states and example for a step module of your own "
                                 "only: a torch.nn recurrent module declares its own")
        source = _read_recurrent(module, reader, label)
    else:
        if states is None or example is None:
            raise TorchReadError(label, f"{type(module).__module__}.{type(module).__name__}",
                                 "a torch.nn recurrent module (nn.RNN, nn.GRU, nn.LSTM, nn.RNNCell, nn.GRUCell, "
                                 "nn.LSTMCell), or a step module of your own with states= and example=")
        source = _read_step(module, states, example, reader, label, torch)
    source.head = head
    head_expr, width = _read_head(head, source, reader, label, torch)
    kind, batch = _loss_kind(loss, batch, label, torch)
    source.loss = loss
    source.cell_class = cell_class
    source.read = dict(states=states, example=example, head=head, loss=loss, on=on, reduction=reduction, batch=batch,
                       name=name)
    return reader.cell(source, head_expr, width, kind, on, reduction, batch, name or _cell_name(label))


def _cell_name(label: str) -> str:
    text = "".join(ch if ch.isalnum() else "_" for ch in label).strip("_") or "cell"
    return text if text[0].isalpha() else "m" + text


def _torch_of(module):
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(module, torch.nn.Module):
        raise SeqgradTypeError("module", module, "a torch.nn.Module (nn.GRU, nn.LSTMCell, your own step module, ...)")
    return torch


# ---------------------------------------------------------------------------------------------
# building the cell: equations over named symbols, parameters as blocks of torch tensors


class _Reader:
    """Collects the step equations (name, SymPy expression in the Cell's scalar notation) and the parameter
    blocks; :meth:`cell` names the parameters and builds the :class:`Cell`."""

    def __init__(self, label: str):
        self.label = label
        self.equations: list = []
        self.taken = {"x", "t", "T", "B", "L", "e", "y", "yhat"}
        self.params: dict = {}  # placeholder Symbol -> (ParamRef, base name, column tag, final name?)
        self.tags: dict = {}  # placeholder -> row tag (the gate it first appears in)
        self.display: dict = {}
        self.gate_of: dict = {}  # pre-activation name -> its activation's name

    def fresh(self, base: str) -> str:
        base = "".join(ch if (ch.isalnum() or ch == "_") else "_" for ch in base).strip("_") or "a"
        if not base[0].isalpha():
            base = "a" + base
        name, k = base, 2
        while name in self.taken:
            name, k = f"{base}{k}", k + 1
        self.taken.add(name)
        return name

    def fresh_param(self, base: str) -> str:
        """A new parameter name whose printed form (a matrix's first letter capitalised) is new too."""
        name, k = base, 2
        while name in self.taken or name[0].swapcase() + name[1:] in self.taken:
            name, k = f"{base}{k}", k + 1
        self.taken.add(name)
        return name

    def define(self, name: str, expr) -> sp.Symbol:
        self.equations.append((name, expr))
        for s in expr.free_symbols:
            if s in self.params and s not in self.tags:
                self.tags[s] = self.gate_of.get(name, name)
        return sp.Symbol(name)

    def param(self, ref: ParamRef, base: str, col_tag: str | None = None, final: bool = False) -> sp.Symbol:
        """A placeholder for a block of a torch parameter; ``base`` is its name, completed by the gate its
        block belongs to and the input it reads (``final``: the name as given)."""
        sym = sp.Symbol(f"_param{len(self.params)}")
        self.params[sym] = (ref, base, col_tag, final)
        return sym

    def is_matrix(self, sym) -> bool:
        return sym in self.params and len(self.params[sym][0].block_shape()) == 2

    def sliced(self, sym, rows=None, cols=None, col_tag=None) -> sp.Symbol:
        ref, base, tag, final = self.params[sym]
        return self.param(ref.sliced(rows, cols), base, col_tag if col_tag is not None else tag, final)

    def activation(self, fname: str, arg, name: str | None):
        """``fname(arg)``; a compound argument becomes a named pre-activation (``z^name`` for an activation
        your code names; any other activation than tanh and sigmoid needs one)."""
        fn = operation_node(fname)  # every activation torch's modules name is an operation of the registry
        if fname == "identity":
            return arg
        if not isinstance(arg, sp.Symbol) and (name is not None or fname not in ("tanh", "sigmoid")):
            arg = self.preactivation(name, arg)
        return fn(arg)

    def preactivation(self, name: str | None, arg) -> sp.Symbol:
        pre = self.fresh("z" + (name or "").replace("_", ""))
        if name and len(name) == 1 and pre == "z" + name:  # z^i; a longer name prints badly as a superscript
            self.display[pre] = f"z^{name}"
        if name:
            self.gate_of[pre] = name
        return self.define(pre, arg)

    def _block_name(self, sym, ref: ParamRef, base: str, col_tag: str | None) -> str:
        """``W`` chunked into gates: ``W_i``; ``W_f`` of ``torch.cat([x, h])``: ``W_fx``, ``W_fh``."""
        tags = []
        if ref.rows is not None or (ref.row and ref.cols is not None):
            tags.append(self.tags.get(sym, ""))
        if col_tag and not ref.row and ref.cols is not None:
            tags.append(col_tag)
        tag = "".join(t.replace("_", "") for t in tags if t)
        return base + (tag if ("_" in base or not tag) else "_" + tag)

    def cell(self, source: TorchSource, head_expr, out_width: int, kind: str, on, reduction, batch, name):
        # parameter names: the base (torch's or your attribute's), the gate its block belongs to, the input it reads
        rename, shapes, refs = {}, {}, {}
        used = set(head_expr.free_symbols)
        for _, e in self.equations:
            used |= e.free_symbols
        for sym, (ref, base, col_tag, final) in self.params.items():
            if sym not in used:
                continue
            pname = self.fresh_param(base if final else self._block_name(sym, ref, base, col_tag))
            rename[sym] = sp.Symbol(pname)
            shapes[pname] = ref.block_shape()
            refs[pname] = ref
        equations = [(n, e.xreplace(rename)) for n, e in self.equations]
        head_expr = head_expr.xreplace(rename)
        widths = source.state_widths
        sizes = {"D": widths["x"], "H": widths[source.states[0]], "C": out_width}
        letters = {}
        for s in source.states:
            letter = next((k for k, v in sizes.items() if k != "C" and k != "D" and v == widths[s]), None)
            if letter is None:
                letter = f"H{len(sizes)}"
                sizes[letter] = widths[s]
            letters[s] = letter
        cell = source.cell_class(equations, states=letters, params=shapes, head=head_expr, sizes=sizes, loss=kind, on=on,
                    reduction=reduction, batch=batch, name=name, display=self.display)
        source.refs = {str(cell.param_symbol(p)): refs[p] for p in shapes}
        cell.torch = source
        return cell


# ---------------------------------------------------------------------------------------------
# torch.nn recurrent modules


def _read_recurrent(module, reader: _Reader, label: str) -> TorchSource:
    nn = sys.modules["torch"].nn
    sequence = isinstance(module, nn.RNNBase)
    if sequence:
        mode = module.mode
        if module.bidirectional:
            raise TorchReadError(label, "bidirectional=True", "a unidirectional module: a bidirectional one runs a "
                                 "second cell backwards in time, not a first-order recurrence in t")
        if getattr(module, "proj_size", 0):
            raise TorchReadError(label, f"proj_size={module.proj_size}", "proj_size=0 (an LSTM with a projection "
                                 "is not read yet)")
        if module.num_layers > 1 and module.dropout:
            raise TorchReadError(label, f"dropout={module.dropout}", "dropout=0 (dropout between layers is random)")
        layers, bias = module.num_layers, module.bias
    else:
        mode = {nn.RNNCell: "RNN_" + getattr(module, "nonlinearity", "tanh").upper(), nn.GRUCell: "GRU",
                nn.LSTMCell: "LSTM"}.get(type(module))
        if mode is None:
            raise TorchReadError(label, type(module).__name__, "nn.RNNCell, nn.GRUCell or nn.LSTMCell")
        layers, bias = 1, module.bias
    H = module.hidden_size
    carried = ["h", "c"] if mode == "LSTM" else ["h"]
    names = {(s, l): (s if layers == 1 else f"{s}_l{l}") for s in carried for l in range(layers)}
    states = [names[(s, l)] for l in range(layers) for s in carried]
    reader.taken |= set(states) | {f"{s}_prev" for s in states}
    u = sp.Symbol("x")
    for layer in range(layers):
        suffix = f"_l{layer}" if sequence else ""
        tag = "" if layers == 1 else f"_l{layer}"
        prev = {s: sp.Symbol(f"{names[(s, layer)]}_prev") for s in carried}
        gates = {}
        G, width = len(_GATES[mode]), (module.input_size if layer == 0 else H)
        for k, g in enumerate(_GATES[mode]):
            block = (k * H, (k + 1) * H)  # gate k's rows of weight_ih, weight_hh, bias_ih, bias_hh (torch's order)
            terms = {}
            for side, v, inp in (("i", u, width), ("h", prev["h"], H)):
                gate = g or "h"  # the RNN's W_ih, W_hh; the gates' W_ir, W_hz, W_ig, ...
                W = reader.param(ParamRef("module", f"weight_{side}h{suffix}", (G * H, inp), rows=block),
                                 f"w_{side}{gate}{tag}", final=True)
                terms[side] = W * v
                if bias:
                    terms[side] += reader.param(ParamRef("module", f"bias_{side}h{suffix}", (G * H,), cols=block, row=True),
                                                f"b_{side}{gate}{tag}", final=True)
            gates[g] = (terms["i"], terms["h"])
        def define(base, value):  # one equation; with several layers printed with the layer as a superscript
            name = names.get((base, layer)) or reader.fresh(base + tag)
            if tag:
                reader.display[name] = f"z^{base[1:]}{layer}" if base[:1] == "z" and len(base) == 2 else f"{base}^{layer}"
            elif base[:1] == "z" and len(base) == 2:
                reader.display[name] = f"z^{base[1]}"
            return reader.define(name, value)

        def gate(g, f, value):  # g_t = f(z_t^g): the gate and its named pre-activation
            return define(g, operation_node(f)(define("z" + g, value)))

        if mode.startswith("RNN"):
            h = define("h", operation_node(mode[4:].lower())(define("z", sum(gates[""]))))
        elif mode == "GRU":
            r, z = gate("r", "sigmoid", sum(gates["r"])), gate("z", "sigmoid", sum(gates["z"]))
            a = define("a", gates["n"][1])  # W_hn h_{t-1} + b_hn, which r multiplies
            n = gate("n", "tanh", gates["n"][0] + r * a)
            h = define("h", (1 - z) * n + z * prev["h"])
        else:
            i, f, g, o = (gate(k, "tanh" if k == "g" else "sigmoid", sum(gates[k])) for k in "ifgo")
            c = define("c", f * prev["c"] + i * g)
            h = define("h", o * sp.tanh(c))
        u = h
    widths = {s: H for s in states}
    widths["x"] = module.input_size
    return TorchSource(module, "sequence" if sequence else "cell", states, names[("h", layers - 1)], {},
                       batch_first=bool(getattr(module, "batch_first", True)), state_widths=widths)


# ---------------------------------------------------------------------------------------------
# your own step module, traced with torch.fx


class _Row:
    """A row-valued tensor of one step as column blocks: [(expression, width), ...]."""

    def __init__(self, blocks):
        self.blocks = [(e, w) for e, w in blocks if w > 0]

    @property
    def width(self) -> int:
        return sum(w for _, w in self.blocks)


@dataclass
class _Param:
    sym: sp.Symbol  # the placeholder of the whole tensor (a block of it once sliced)
    transposed: bool = False


ALLOWED = ("nn.Linear, F.linear, x @ W.T (or x @ W) with W a parameter, + - * and division by a number, "
           "activations (" + ", ".join(sorted({k for k in TORCH_ACTIVATIONS if k.islower()} - {"gelu"}) + ["gelu (tanh form)"])
           + "), torch.cat, "
           "chunk, split, narrow and column slices along the last dimension")


def _frame(node):
    return node.meta.get("seqgrad_frame")


def _where(frame) -> str | None:
    if frame is None:
        return None
    filename, lineno = frame
    code = linecache.getline(filename, lineno).strip()
    return f"{os.path.basename(filename)}:{lineno}" + (f" `{code}`" if code else "")


def _user_frame(frames):
    """The innermost frame of the user's code (not torch's, not seqgrad's) among ``frames`` (innermost last)."""
    torch_dir = os.path.dirname(sys.modules["torch"].__file__)
    ours = os.path.dirname(os.path.abspath(__file__))
    for filename, lineno in reversed(frames):
        if not filename.startswith(torch_dir) and not filename.startswith(ours) and "importlib" not in filename:
            return filename, lineno
    return None


def _tracer(torch):
    class Tracer(torch.fx.Tracer):
        def create_node(self, *args, **kwargs):
            node = super().create_node(*args, **kwargs)
            frames, f = [], sys._getframe(1)
            while f is not None:
                frames.append((f.f_code.co_filename, f.f_lineno))
                f = f.f_back
            node.meta["seqgrad_frame"] = _user_frame(list(reversed(frames)))
            return node

    return Tracer()


def _trace(module, label, torch):
    try:
        graph = _tracer(torch).trace(module)
    except Exception as exc:  # fx refuses data-dependent control flow, iteration, ... (the user's line is in the traceback)
        import traceback

        frames = [(fs.filename, fs.lineno) for fs in traceback.extract_tb(exc.__traceback__)]
        op = "data-dependent control flow" if "control flow" in str(exc) else f"{type(exc).__name__}: {exc}".splitlines()[0]
        raise TorchReadError(label, op, "one step traceable by torch.fx: no if/while on tensor values, no tensor "
                             "iteration; " + ALLOWED, _where(_user_frame(frames))) from None
    return torch.fx.GraphModule(module, graph)


def _assigned_names(gm) -> dict:
    """node -> the name your code assigns it (``r = torch.sigmoid(...)``, ``i, f, g, o = gates.chunk(4, 1)``)."""
    by_line: dict = {}
    for node in gm.graph.nodes:
        fr = _frame(node)
        if fr is not None and node.op not in ("placeholder", "output"):
            by_line.setdefault(fr, []).append(node)
    out = {}
    for (filename, lineno), nodes in by_line.items():
        try:
            stmt = ast.parse(linecache.getline(filename, lineno).strip()).body
        except SyntaxError:
            continue
        if len(stmt) != 1:
            continue
        stmt = stmt[0]
        if isinstance(stmt, ast.AugAssign):
            for n in nodes:
                n.meta["seqgrad_inplace"] = "augmented assignment (+=, *=, ...)"
            continue
        if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
            continue
        target = stmt.targets[0]
        if isinstance(target, ast.Name):
            out[nodes[-1]] = _printable(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Name) for e in target.elts):
            items = [n for n in nodes if n.op == "call_function" and n.target is operator.getitem]
            for n, elt in zip(items[-len(target.elts):], target.elts):
                out[n] = _printable(elt.id)
    return out


def _printable(name: str) -> str:
    """Your variable's name as an equation name: ``h_tilde`` -> ``htilde`` (printed h with a tilde, as SymPy
    reads the suffix), so that it can carry a step index and a superscript."""
    bare = name.replace("_", "")
    return bare if bare and bare[0].isalpha() else name


def _read_step(module, states, example, reader: _Reader, label: str, torch) -> TorchSource:
    states = _names("states", states)
    reader.taken |= set(states) | {f"{s}_prev" for s in states}
    if not isinstance(example, (tuple, list)) or len(example) < 1:
        raise TorchReadError(label, f"example={type(example).__name__}", "the arguments of one step as a tuple: "
                             "(x_t, h_prev) or (x_t, h_prev, c_prev) or (x_t, (h_prev, c_prev)), tensors of shape (B, width)")
    call, tensors = [], []
    for arg in example[1:]:
        if isinstance(arg, (tuple, list)):
            call.append(tuple("s" for _ in arg))
            tensors += list(arg)
        else:
            call.append("s")
            tensors.append(arg)
    every = [example[0]] + tensors
    if not all(isinstance(t, torch.Tensor) for t in every):
        raise TorchReadError(label, "example", "tensors only: (x_t, state, ...) of shape (B, width)")
    if len(tensors) != len(states):
        raise TorchReadError(label, f"{len(tensors)} state tensor(s) in example, states={' '.join(states)!r}",
                             f"one state tensor per name in states= ({len(states)}), in the order of the forward's arguments")
    B = example[0].shape[0] if example[0].ndim == 2 else None
    for nm, t in zip(["x"] + states, every):
        if t.ndim != 2 or t.shape[0] != B:
            raise TorchReadError(label, f"example {nm} of shape {tuple(t.shape)}", "2-D tensors (B, width), one batch "
                                 "size B for the input and every state")
    gm = _trace(module, label, torch)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(example):
        raise TorchReadError(label, f"forward takes {len(placeholders)} argument(s), example gives {len(example)}",
                             "an example with one entry per argument of forward (x_t, then the states)")
    if len(placeholders) < 2:
        raise TorchReadError(label, "forward(x) without a state", "a recurrent step forward(x_t, h_prev, ...) -> new states")
    dtype = _dtype(module, torch)  # the example gives the shapes; its values run in the module's own dtype
    _run_example(gm, [e.to(dtype) if not isinstance(e, (tuple, list)) else tuple(t.to(dtype) for t in e)
                      for e in example], label, torch)
    widths = {"x": int(example[0].shape[1])}
    widths.update({s: int(t.shape[1]) for s, t in zip(states, tensors)})
    out_node = next(n for n in gm.graph.nodes if n.op == "output")
    result = out_node.args[0]
    returns_tuple = isinstance(result, (tuple, list))
    outs = list(result) if returns_tuple else [result]
    if len(outs) != len(states):
        raise TorchReadError(label, f"forward returns {len(outs)} value(s)", f"the {len(states)} new state(s) "
                             f"{', '.join(states)} (states=), in that order", _where(_frame(outs[0]) if outs and hasattr(outs[0], "meta") else None))
    for s, o in zip(states, outs):
        shape = tuple(o.meta["seqgrad_shape"]) if hasattr(o, "meta") and "seqgrad_shape" in o.meta else None
        if shape != (B, widths[s]):
            raise TorchReadError(label, f"returns {s} of shape {shape}", f"the shape it enters with, {(B, widths[s])}",
                                 _where(_frame(o)) if hasattr(o, "meta") else None)
    names = _assigned_names(gm)
    for s, o in zip(states, outs):
        names[o] = s
    if len(set(outs)) != len(outs):
        raise TorchReadError(label, "the same tensor returned as two states", "one new value per state")
    _Translator(gm, reader, label, names, states, placeholders, call, outs, torch, widths).run()
    if not any(sp.Symbol(f"{s}_prev") in e.free_symbols for _, e in reader.equations for s in states):
        raise TorchReadError(label, "no new state reads a previous state", "a recurrent step: h_t must depend on h_{t-1}")
    return TorchSource(module, "step", states, states[0], {}, call=tuple(call), returns_tuple=returns_tuple,
                       state_widths=widths)


def _run_example(gm, args, label, torch) -> None:
    """Run the traced step once on ``example``: every node's shape, or the op whose shapes disagree."""

    failed = []

    class Shapes(torch.fx.Interpreter):
        def run_node(self, n):
            try:
                value = super().run_node(n)
            except Exception as exc:
                failed.append((n, f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"))
                raise
            if isinstance(value, torch.Tensor):
                n.meta["seqgrad_shape"] = tuple(value.shape)
            return value

    try:
        with torch.no_grad():
            Shapes(gm).run(*args)
    except Exception:
        if not failed:
            raise
        n, why = failed[0]
        raise TorchReadError(label, f"{_describe(gm, n)} on the example's shapes", f"shapes that agree with example= "
                             f"({why})", _where(_frame(n))) from None


def _describe(gm, node) -> str:
    if node.op == "call_module":
        return f"{type(gm.get_submodule(node.target)).__name__} (self.{node.target})"
    if node.op == "call_method":
        return f"Tensor.{node.target}"
    if node.op == "get_attr":
        return f"self.{node.target}"
    target = node.target
    mod = getattr(target, "__module__", None) or ""
    name = getattr(target, "__name__", str(target))
    if mod in ("_operator", "operator"):
        return {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "matmul": "@", "pow": "**",
                "neg": "unary -", "getitem": "indexing []"}.get(name, f"operator.{name}")
    if "functional" in mod:
        return f"F.{name}"
    if mod.startswith("torch") or getattr(target, "__self__", None) is not None:
        return f"torch.{name}"
    return f"{mod}.{name}" if mod else name


class _Translator:
    """The fx graph of one step -> equations (one walk over the nodes, one handler per operation)."""

    def __init__(self, gm, reader, label, names, states, placeholders, call, outs, torch, widths, head=False):
        self.gm, self.r, self.label, self.names, self.torch, self.widths = gm, reader, label, names, torch, widths
        self.states, self.outs, self.head = states, outs, head
        self.env: dict = {}
        self.placeholders, self.call = placeholders, call
        self.users_split = {n: bool(n.users) and all(self._is_split(u) for u in n.users) for n in gm.graph.nodes}

    def _piece(self, node) -> bool:
        return (node.op == "call_function" and node.target is operator.getitem and isinstance(node.args[0], self.torch.fx.Node)
                and self._is_split(node.args[0]))

    @staticmethod
    def _is_split(u) -> bool:
        return (u.op in ("call_method", "call_function") and getattr(u.target, "__name__", u.target) in
                ("chunk", "split", "narrow", "getitem"))

    def fail(self, node, op=None, allowed=ALLOWED):
        raise TorchReadError(self.label, op or _describe(self.gm, node), allowed, _where(_frame(node)))

    # -- values ----------------------------------------------------------------------------
    def row(self, node, v):
        """``v`` as a row (a parameter vector becomes a row parameter)."""
        if isinstance(v, _Row):
            return v
        if isinstance(v, _Param):
            ref = self.r.params[v.sym][0]
            if len(ref.shape) == 1 or (len(ref.shape) == 2 and ref.shape[0] == 1):
                ref = ParamRef(ref.owner, ref.qualname, ref.shape, row=True)
                sym = self.r.param(ref, self.r.params[v.sym][1])
                return _Row([(sym, ref.block_shape()[0])])
            self.fail(node, f"{_describe(self.gm, node)} with the matrix parameter {ref.qualname} used elementwise",
                      "matrix parameters in x @ W.T or F.linear; vectors (shape (H,) or (1, H)) elementwise")
        self.fail(node)

    def split(self, node, expr, lo, hi, width):
        """Columns lo..hi of one block (a parameter block is sliced; an input, state or named value cannot be)."""
        if (lo, hi) == (0, width):
            return expr
        if expr.is_Number:
            return expr
        if isinstance(expr, sp.Symbol):
            if expr in self.r.params:
                return self.r.sliced(expr, rows=(lo, hi))
            self.fail(node, f"{_describe(self.gm, node)}: a column slice of {expr.name}",
                      "slices of gates computed in this step (a linear map's output, a sum of them, an activation "
                      "of it), not of the input, a state or a value used elsewhere")
        if expr.is_Mul:
            mats = [a for a in expr.args if self.r.is_matrix(a)]
            if mats:
                (W,) = mats
                return expr.xreplace({W: self.r.sliced(W, rows=(lo, hi))})
            return sp.Mul(*[self.split(node, a, lo, hi, width) for a in expr.args])
        return expr.func(*[self.split(node, a, lo, hi, width) for a in expr.args])

    def columns(self, node, v: _Row, lo, hi) -> _Row:
        out, start = [], 0
        for e, w in v.blocks:
            a, b = max(lo, start), min(hi, start + w)
            if a < b:
                out.append((self.split(node, e, a - start, b - start, w), b - a))
            start += w
        return _Row(out)

    def align(self, node, a: _Row, b: _Row):
        cuts = sorted({0} | set(_bounds(a)) | set(_bounds(b)))
        pieces = list(zip(cuts[:-1], cuts[1:]))
        return ([self.columns(node, a, lo, hi).blocks[0][0] for lo, hi in pieces],
                [self.columns(node, b, lo, hi).blocks[0][0] for lo, hi in pieces], [hi - lo for lo, hi in pieces])

    def atom(self, node, expr):
        """A value a linear map can be applied to: a symbol, a sum; a product is named first."""
        if isinstance(expr, sp.Symbol) or not expr.is_Mul:
            return expr
        if self.head:
            self.fail(node, f"{_describe(self.gm, node)} of a product", "a head that applies its linear maps to the "
                      "state or to sums and activations of it")
        return self.r.define(self.r.fresh("a"), expr)

    # -- the walk ----------------------------------------------------------------------------
    def run(self):
        for node in self.gm.graph.nodes:
            if node.meta.get("seqgrad_inplace"):
                self.fail(node, f"in-place operation ({node.meta['seqgrad_inplace']})",
                          "out-of-place operations only: write h = h + a, not h += a")
            if node.op == "output":
                continue
            value = self.visit(node)
            self.env[node] = self.name(node, value)
        return self.env

    def name(self, node, value):
        """Name the value your code assigns (or a state): one equation per block."""
        name = self.names.get(node)
        if name is None or not isinstance(value, _Row) or (self.users_split.get(node) and node not in self.outs):
            return value
        if node not in self.outs:
            if all(isinstance(e, sp.Symbol) for e, _ in value.blocks):
                return value  # an alias: h, c = state; xh = torch.cat([x, h])
            if self._piece(node) and len(node.users) == 1:
                return value  # a piece of a chunk used once: inlined into what uses it (i + p_i * c)
            name = self.r.fresh(name)
        elif len(value.blocks) != 1:
            self.fail(node, f"the state {name} built by torch.cat", "states computed as one block (a state cannot be "
                      "assembled from pieces)")
        blocks = []
        for k, (e, w) in enumerate(value.blocks):
            if isinstance(e, sp.Symbol) and node not in self.outs:
                blocks.append((e, w))
                continue
            label = name if len(value.blocks) == 1 else self.r.fresh(f"{name}{k}")
            if isinstance(e, (sp.tanh, operation_node("sigmoid"))) and not isinstance(e.args[0], sp.Symbol):
                e = e.func(self.r.preactivation(label, e.args[0]))  # a gate sliced out of an activated block
            blocks.append((self.r.define(label, e), w))
        return _Row(blocks)

    def arg(self, a):
        if isinstance(a, self.torch.fx.Node):
            return self.env[a]
        if isinstance(a, (tuple, list)):
            return type(a)(self.arg(x) for x in a)
        return a

    def visit(self, node):
        if node.op == "placeholder":
            k = self.placeholders.index(node)
            if k == 0:
                return _Row([(sp.Symbol("x"), self.widths["x"])])
            before = sum(1 if c == "s" else len(c) for c in self.call[:k - 1])
            spec = self.call[k - 1]
            if spec == "s":
                s = self.states[before]
                return self._state_row(s)
            return tuple(self._state_row(self.states[before + j]) for j in range(len(spec)))
        if node.op == "get_attr":
            return self.get_attr(node)
        args = [self.arg(a) for a in node.args]
        kwargs = {k: self.arg(v) for k, v in node.kwargs.items()}
        if kwargs.get("inplace") or (node.op == "call_method" and node.target.endswith("_") and not node.target.startswith("__")):
            self.fail(node, f"in-place operation {_describe(self.gm, node)}", "out-of-place operations only")
        if node.op == "call_module":
            return self.call_module(node, args, kwargs)
        name = node.target if node.op == "call_method" else getattr(node.target, "__name__", str(node.target))
        if node.op == "call_function" and getattr(node.target, "__module__", "") in ("_operator", "operator") \
                and name.startswith("i") and name[1:] in ("add", "sub", "mul", "truediv", "matmul"):
            self.fail(node, f"in-place operation operator.{name}", "out-of-place operations only")
        handler = getattr(self, f"op_{name}", None)
        if node.op == "call_function" and not _from_torch_or_python(node.target):
            self.fail(node)
        if handler is None:
            act = _activation_name(self, node, name, args, kwargs)
            if act is not None:
                return self.apply_activation(node, act, args[0])
            self.fail(node)
        return handler(node, *args, **kwargs)

    def _state_row(self, s):
        return _Row([(sp.Symbol(f"{s}_prev"), self._width(s))])

    def _width(self, s):
        return self.widths[s]

    def get_attr(self, node):
        owner = "head" if self.head else "module"
        params = dict(self.gm.named_parameters())
        if node.target not in params:
            self.fail(node, f"the tensor self.{node.target} (a buffer or constant, not a parameter)",
                      "nn.Parameter tensors only (constants in a step are not read)")
        shape = tuple(params[node.target].shape)
        ref = ParamRef(owner, node.target, shape)
        base = node.target.replace(".", "_")
        return _Param(self.r.param(ref, ("y_" + base) if self.head else base))

    def call_module(self, node, args, kwargs):
        nn = self.torch.nn
        sub = self.gm.get_submodule(node.target)
        if isinstance(sub, nn.Linear):
            prefix = node.target
            W = ParamRef("head" if self.head else "module", f"{prefix}.weight", tuple(sub.weight.shape))
            b = ParamRef(W.owner, f"{prefix}.bias", tuple(sub.bias.shape)) if sub.bias is not None else None
            base = prefix.replace(".", "_")
            if self.head:
                wname, bname = "w_y" + base, "b_y" + base
            else:
                # W_f -> W_f, b_f; W -> W, b (its blocks W_i, b_i); lin -> W_lin, b_lin
                weight_like = base[:1] in "wWuUvV" and (len(base) == 1 or base[1] == "_")
                wname = base if weight_like else "w_" + base
                bname = "b" + base[1:] if weight_like else "b_" + base
            Wp = _Param(self.r.param(W, wname))
            bp = _Param(self.r.param(b, bname)) if b is not None else None
            return self.linear(node, self.row(node, args[0]), Wp, bp)
        act = _activation_name(self, node, type(sub).__name__, args, {}, module=sub)
        if act is not None:
            return self.apply_activation(node, act, args[0])
        self.fail(node)

    # -- operations ------------------------------------------------------------------------
    def linear(self, node, v: _Row, W: _Param, b: _Param | None):
        ref = self.r.params[W.sym][0]
        if W.transposed:
            ref = ParamRef(ref.owner, ref.qualname, ref.shape, transposed=True)
            W = _Param(self.r.param(ref, self.r.params[W.sym][1]))
        if len(ref.block_shape()) != 2 or ref.block_shape()[1] != v.width:
            self.fail(node, f"{_describe(self.gm, node)} of a row of width {v.width} with {ref.qualname} of "
                      f"shape {ref.shape}", "a weight stored out x in (torch's layout), applied as x W^T")
        terms, start = [], 0
        several = len(v.blocks) > 1
        for e, w in v.blocks:
            arg = self.atom(node, e)
            tag = (arg.name[:-5] if arg.name.endswith("_prev") else arg.name) if several and isinstance(arg, sp.Symbol) else None
            Wk = self.r.sliced(W.sym, cols=(start, start + w), col_tag=tag) if several else W.sym
            terms.append(Wk * arg)
            start += w
        if b is not None:
            terms.append(b.sym)
        return _Row([(sp.Add(*terms), ref.block_shape()[0])])

    def apply_activation(self, node, fname, v):
        v = self.row(node, v)
        name = self.names.get(node)
        if self.users_split.get(node) and node not in self.outs:
            name = None
        if self.head:
            name = None
        blocks = []
        for k, (e, w) in enumerate(v.blocks):
            label = name if (name is None or len(v.blocks) == 1) else f"{name}{k}"
            blocks.append((self.r.activation(fname, e, label), w))
        return _Row(blocks)

    def _binary(self, node, a, b, op):
        numbers = (int, float)
        if isinstance(a, numbers) and isinstance(b, numbers):
            return op(a, b)
        if isinstance(a, numbers) or isinstance(b, numbers):
            row, num, first = (self.row(node, b), a, True) if isinstance(a, numbers) else (self.row(node, a), b, False)
            return _Row([(op(sp.nsimplify(num) if first else e, e if first else sp.nsimplify(num)), w) for e, w in row.blocks])
        a, b = self.row(node, a), self.row(node, b)
        if a.width != b.width:
            self.fail(node, f"{_describe(self.gm, node)} of widths {a.width} and {b.width}", "rows of one width")
        ea, eb, widths = self.align(node, a, b)
        return _Row([(op(x, y), w) for x, y, w in zip(ea, eb, widths)])

    def op_add(self, node, a, b, alpha=1):
        if alpha != 1:
            self.fail(node, "torch.add with alpha", "alpha=1")
        return self._binary(node, a, b, operator.add)

    def op_sub(self, node, a, b, alpha=1):
        if alpha != 1:
            self.fail(node, "torch.sub with alpha", "alpha=1")
        return self._binary(node, a, b, operator.sub)

    def op_rsub(self, node, a, b, alpha=1):
        return self.op_sub(node, b, a, alpha)

    def op_mul(self, node, a, b):
        return self._binary(node, a, b, operator.mul)

    def op_truediv(self, node, a, b):
        if not isinstance(b, (int, float)):
            self.fail(node, f"{_describe(self.gm, node)} by a tensor", "division by a number")
        return self._binary(node, a, b, operator.truediv)

    op_div = op_truediv

    def op_neg(self, node, a):
        return self._binary(node, a, -1, operator.mul)

    def op_matmul(self, node, a, W):
        if not isinstance(W, _Param):
            self.fail(node, f"{_describe(self.gm, node)} of two computed values", "x @ W.T (or x @ W) with W a parameter")
        ref = self.r.params[W.sym][0]
        if len(ref.shape) != 2:
            self.fail(node, f"@ with {ref.qualname} of shape {ref.shape}", "a 2-D weight")
        # x @ W.T reads W stored out x in (torch's layout); x @ W reads it in x out (its transpose is the cell's)
        return self.linear(node, self.row(node, a), _Param(W.sym, transposed=not W.transposed), None)

    op_mm = op_matmul

    def op_linear(self, node, a, W, b=None, bias=None):
        b = b if b is not None else bias
        if not isinstance(W, _Param) or (b is not None and not isinstance(b, _Param)):
            self.fail(node, "F.linear with a computed weight", "F.linear(x, W, b) with parameters W, b")
        return self.linear(node, self.row(node, a), W, b)

    def op_t(self, node, W):
        if not isinstance(W, _Param):
            self.fail(node, f"{_describe(self.gm, node)} of a computed value", "the transpose of a parameter (x @ W.T)")
        return _Param(W.sym, not W.transposed)

    def op_transpose(self, node, W, d0=0, d1=1):
        if {d0, d1} not in ({0, 1}, {-1, -2}):
            self.fail(node)
        return self.op_t(node, W)

    def op_getattr(self, node, obj, attr):
        if attr in ("T", "mT"):
            return self.op_t(node, obj)
        self.fail(node, f"the attribute .{attr}")

    def _dim(self, node, dim):
        if dim not in (1, -1):
            self.fail(node, f"{_describe(self.gm, node)} along dim={dim}", "the last dimension (dim=1 or -1): the "
                      "columns of (B, width) rows")

    def op_cat(self, node, values, dim=0):
        self._dim(node, dim)
        return _Row([blk for v in values for blk in self.row(node, v).blocks])

    op_concat = op_cat
    op_concatenate = op_cat

    def op_chunk(self, node, v, chunks, dim=0):
        self._dim(node, dim)
        v = self.row(node, v)
        size = -(-v.width // chunks)
        return tuple(self.columns(node, v, lo, min(lo + size, v.width)) for lo in range(0, v.width, size))

    def op_split(self, node, v, sizes, dim=0):
        self._dim(node, dim)
        v = self.row(node, v)
        if isinstance(sizes, int):
            sizes = [sizes] * (-(-v.width // sizes))
        out, lo = [], 0
        for s in sizes:
            out.append(self.columns(node, v, lo, min(lo + s, v.width)))
            lo += s
        return tuple(out)

    def op_narrow(self, node, v, dim, start, length):
        self._dim(node, dim)
        return self.columns(node, self.row(node, v), start, start + length)

    def op_getitem(self, node, v, index):
        if isinstance(v, tuple):
            return v[index]
        if isinstance(v, _Param):
            self.fail(node, f"a slice of the parameter {self.r.params[v.sym][0].qualname}", "whole parameters (a "
                      "linear map's output can be chunked, split or sliced: its weight is split with it)")
        v = self.row(node, v)
        if isinstance(index, tuple) and len(index) == 2 and index[0] == slice(None) and isinstance(index[1], slice):
            lo, hi, step = index[1].indices(v.width)
            if step == 1:
                return self.columns(node, v, lo, hi)
        self.fail(node, f"the index [{index}]", "column slices v[:, a:b] of a (B, width) row")


def _bounds(v: _Row):
    out, start = [], 0
    for _, w in v.blocks:
        start += w
        out.append(start)
    return out


def _from_torch_or_python(target) -> bool:
    """A function of torch or of Python's operator module (fx traces through your own functions)."""
    if target is builtins.getattr:
        return True
    owner = getattr(target, "__self__", None)
    mod = getattr(target, "__module__", None) or getattr(owner, "__module__", None) or getattr(owner, "__name__", "")
    return mod in ("_operator", "operator") or str(mod).startswith("torch")


def _activation_name(tr, node, name, args, kwargs, module=None):
    """The Cell's name for a torch activation (function, method or module), its arguments checked; None: not one."""
    fname = TORCH_ACTIVATIONS.get(name)
    if fname is None:
        return None
    get = (lambda attr, default: getattr(module, attr, default)) if module is not None else \
        (lambda attr, default: kwargs.get(attr, default))
    extra = list(args[1:])
    if fname == "leaky_relu":
        slope = get("negative_slope", extra[0] if extra else 0.01)
        if slope != 0.01:
            tr.fail(node, f"leaky ReLU with negative_slope={slope}", "negative_slope=0.01 (the Cell's leaky_relu)")
    elif fname == "softplus":
        if get("beta", extra[0] if extra else 1) != 1:
            tr.fail(node, "softplus with beta != 1", "beta=1")
    elif fname == "gelu_tanh":
        approximate = get("approximate", "none")
        if approximate not in ("none", "tanh"):
            tr.fail(node, f"GELU(approximate={approximate!r})", "approximate='none' (the registry's gelu, erf form) "
                    "or 'tanh'")
        fname = "gelu" if approximate == "none" else fname
    elif extra and fname != "identity":
        tr.fail(node, f"{name} with extra arguments {extra}", "the activation of one tensor")
    if get("inplace", False):
        tr.fail(node, f"in-place {name} (inplace=True)", "out-of-place operations only")
    return fname


# ---------------------------------------------------------------------------------------------
# the head and the loss


def _read_head(head, source: TorchSource, reader: _Reader, label: str, torch):
    out = sp.Symbol(source.output)
    H = source.state_widths[source.output]
    if head is None:
        return out, H
    nn = torch.nn
    hlabel = f"{label} head"
    if isinstance(head, nn.Linear):
        if head.in_features != H:
            raise TorchReadError(hlabel, f"nn.Linear({head.in_features}, {head.out_features})",
                                 f"a head that reads the state {source.output} of width {H}")
        W = reader.param(ParamRef("head", "weight", tuple(head.weight.shape)), "w_y", final=True)
        expr = W * out + (reader.param(ParamRef("head", "bias", tuple(head.bias.shape)), "b_y", final=True)
                          if head.bias is not None else 0)
        return expr, head.out_features
    if not callable(head):
        raise SeqgradTypeError("head", head, "None (yhat = the state), an nn.Linear, or a module or function of the state")
    gm = _trace(head if isinstance(head, nn.Module) else _Wrap(head, nn), hlabel, torch)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != 1:
        raise TorchReadError(hlabel, f"a head of {len(placeholders)} arguments", f"a head of the state {source.output} alone")
    _run_example(gm, [torch.zeros(2, H, dtype=_dtype(head, torch))], hlabel, torch)
    tr = _Translator(gm, reader, hlabel, {}, [source.output], placeholders, (), [], torch, {source.output: H}, head=True)
    tr.visit = _head_visit(tr, out, H)
    env = tr.run()
    result = next(n for n in gm.graph.nodes if n.op == "output").args[0]
    value = env.get(result) if hasattr(result, "op") else None
    if not isinstance(value, _Row) or len(value.blocks) != 1:
        raise TorchReadError(hlabel, "its output", "one (B, C) tensor")
    return value.blocks[0][0], value.width


def _dtype(module, torch):
    params = list(module.parameters()) if hasattr(module, "parameters") else []
    return params[0].dtype if params else torch.get_default_dtype()


class _Wrap:
    """A head function as a module fx can trace (its parameters: none)."""

    def __new__(cls, fn, nn):
        class Head(nn.Module):
            def forward(self, h):
                return fn(h)

        return Head()


def _head_visit(tr, out, H):
    visit = tr.visit

    def head_visit(node):
        if node.op == "placeholder":
            return _Row([(out, H)])
        return visit(node)

    return head_visit


def _loss_kind(loss, batch, label, torch):
    """The Cell's loss kind (and batch reduction) for ``loss``: "squared" (1/2 ||yhat - y||^2), "cross_entropy",
    or ``nn.CrossEntropyLoss`` (reduction sum or mean over the batch)."""
    nn = torch.nn
    if loss is None or isinstance(loss, str):
        return ("squared" if loss is None else loss), batch
    if isinstance(loss, nn.CrossEntropyLoss):
        if loss.weight is not None or loss.label_smoothing or loss.reduction not in ("sum", "mean"):
            raise TorchReadError(f"{label} loss", f"nn.CrossEntropyLoss(reduction={loss.reduction!r}, weight, "
                                 "label_smoothing)", "no class weights, no label smoothing, reduction 'sum' or 'mean'")
        return "cross_entropy", loss.reduction
    if isinstance(loss, nn.MSELoss):
        raise TorchReadError(f"{label} loss", f"nn.MSELoss(reduction={loss.reduction!r})", "loss='squared' (the text's "
                             "1/2 ||yhat - y||^2, summed over the batch; nn.MSELoss(reduction='sum') is twice it, "
                             "'mean' also divides by B*C) or 'cross_entropy' / nn.CrossEntropyLoss")
    raise TorchReadError(f"{label} loss", type(loss).__name__, "'squared', 'cross_entropy' or nn.CrossEntropyLoss")
