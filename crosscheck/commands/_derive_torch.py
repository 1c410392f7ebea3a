"""``seqgrad derive torch MODULE_PATH:NAME``: the cell of a PyTorch module of your project.

``MODULE_PATH`` is a module importable from the current directory (``mypkg.cells``) or a ``.py`` file;
it is *imported* with :mod:`importlib` (its top level runs, as ``python -c "import mypkg.cells"`` would
run it), never ``eval``-ed.  ``NAME`` is, in that module, an ``nn.Module`` instance, an ``nn.Module``
class that takes no arguments, or a function of no arguments returning a module or a
:class:`~derive.cell.Cell` (``Cell.from_torch(...)`` with the head and loss you want).  A step module of
your own also needs ``--states`` and ``--example``.  The entry has the shape of
:data:`crosscheck.commands.derive.MODELS`.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import os
import re
import sys

from ._common import add_notation
from ._derive_cell import checks, loss_and_positions, run_cell_object, usage


def _add_torch(p: argparse.ArgumentParser) -> None:
    p.add_argument("target", metavar="MODULE_PATH:NAME",
                   help="e.g. mypkg.cells:PeepholeLSTM (imported from the current directory, never eval-ed)")
    when = p.add_mutually_exclusive_group()
    when.add_argument("--general", action="store_true", help="the derivation at a general step t (the default)")
    when.add_argument("--steps", type=int, metavar="T", help="the unrolled program of T positions")
    p.add_argument("--check", action="store_true",
                   help="compare every derived gradient with the module's own autograd (float64); exit 1 on a mismatch")
    p.add_argument("--latex", action="store_true", help="print LaTeX: a complete display (align*, amsmath)")
    add_notation(p)
    p.add_argument("--states", metavar="NAMES", help="a step module's states, in the order of its arguments, e.g. 'h c'")
    p.add_argument("--example", metavar="x=3,h=4",
                   help="a step module's widths: the input x and each state (one example row of each is traced)")
    p.add_argument("--loss", choices=("squared", "cross-entropy"), default="squared", help="the loss (default squared)")
    p.add_argument("--on", metavar="WHERE", help="loss positions: final (default), every, or a list such as 0,3,5")
    p.add_argument("--reduction", choices=("sum", "mean"), default="sum", help="sum or average over positions")
    p.add_argument("--batch", choices=("sum", "mean"), default="sum", help="sum or average over the batch (1/B)")


def load(target: str):
    """The object ``NAME`` of ``MODULE_PATH:NAME``, imported (never eval-ed) from the current directory."""
    path, colon, name = target.partition(":")
    dotted = r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*"
    if not colon or not re.fullmatch(dotted, name) or not (re.fullmatch(dotted, path) or path.endswith(".py")):
        raise usage("MODULE_PATH:NAME", target, "a module path and a name, e.g. mypkg.cells:PeepholeLSTM or cells.py:cell")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # the user's project, as python -m would see it
    try:
        if path.endswith(".py"):
            if not os.path.isfile(path):
                raise usage("MODULE_PATH", path, "an existing .py file or an importable module")
            spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(path)
    except ModuleNotFoundError as exc:
        if exc.name and path.startswith(exc.name):
            raise usage("MODULE_PATH", path, f"a module importable from {os.getcwd()} (no module {exc.name!r})") from None
        raise usage("MODULE_PATH", path, f"a module that imports without error ({type(exc).__name__}: {exc})") from None
    except Exception as exc:  # the user's module failed on import: one line, not its traceback
        if type(exc).__module__.startswith("seqgrad"):
            raise
        raise usage("MODULE_PATH", path, f"a module that imports without error ({type(exc).__name__}: {exc})") from None
    obj = module
    for part in name.split("."):
        if not hasattr(obj, part):
            raise usage("NAME", name, f"a name defined in {path}")
        obj = getattr(obj, part)
    return obj


def _example(module, states, text, torch):
    if not states or not text:
        raise usage("--states/--example", None, "both, for a step module of your own: --states 'h c' --example x=3,h=4,c=4")
    widths = {}
    for part in text.split(","):
        key, eq, value = part.partition("=")
        if not eq or not value.strip().isdigit() or int(value) < 1:
            raise usage("--example", text, "widths as x=3,h=4 (the input x and each state)")
        widths[key.strip()] = int(value)
    names = states.replace(",", " ").split()
    if sorted(widths) != sorted(["x"] + names):
        raise usage("--example", text, f"one width for x and for each state ({', '.join(names)})")
    rows = [torch.zeros(1, widths[s]) for s in names]
    params = [p for p in inspect.signature(module.forward).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    separate = len(params) == 1 + len(names) or len(names) == 1
    return (torch.zeros(1, widths["x"]), *rows) if separate else (torch.zeros(1, widths["x"]), tuple(rows))


def _run_torch(args) -> str:
    obj = load(args.target)  # before torch is imported: a bad MODULE_PATH:NAME is refused at once

    import torch

    from seqgrad.derive.cell import Cell

    if isinstance(obj, type) and issubclass(obj, torch.nn.Module):
        try:
            obj = obj()
        except TypeError as exc:
            raise usage("NAME", args.target, f"a module class that takes no arguments ({exc}), an instance, or a "
                         "function returning one") from None
    elif callable(obj) and not isinstance(obj, (torch.nn.Module, Cell)):
        obj = _call_factory(obj, args.target)
    if isinstance(obj, Cell):
        cell = obj
        if getattr(cell, "torch", None) is None:
            raise usage("NAME", args.target, "a cell read from torch (Cell.from_torch); for equations use seqgrad derive cell")
    elif isinstance(obj, torch.nn.Module):
        loss, on = loss_and_positions(args)
        step = not isinstance(obj, (torch.nn.RNNBase, torch.nn.RNNCellBase))
        example = _example(obj, args.states, args.example, torch) if step else None
        cell = Cell.from_torch(obj, states=args.states if step else None, example=example, loss=loss, on=on,
                               reduction=args.reduction, batch=args.batch)
    else:
        raise usage("NAME", args.target, "an nn.Module, an nn.Module class, or a function returning one or a Cell")
    check, args.check = args.check, False
    text = run_cell_object(cell, args)
    if check:
        text += "\n\n" + _check_text(cell)
    return text


def _call_factory(fn, target):
    """``NAME()`` for a function of no arguments (the user's factory); its failure is one line, not a traceback."""
    try:
        required = [p for p in inspect.signature(fn).parameters.values()
                    if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    except (TypeError, ValueError):
        required = ["?"]
    if required:
        raise usage("NAME", target, "an nn.Module, an nn.Module class, or a function of no arguments returning a "
                     "module or a Cell")
    try:
        return fn()
    except Exception as exc:
        if type(exc).__module__.startswith("seqgrad"):
            raise
        raise usage("NAME", target, f"a function that runs without error ({type(exc).__name__}: {exc})") from None


def _check_text(cell) -> str:
    from seqgrad.crosscheck.torch_cells import against_autograd

    rows = against_autograd(cell, steps=(1, 4, 25))
    ok = rows.max_abs < 1e-10
    checks.record(ok)
    head = ("check against the module's own torch autograd (float64, T = 1, 4, 25, its weights): "
            + ("all gradients agree (< 1e-10)" if ok else "MISMATCH"))
    return head + "\n" + str(rows)


MODELS = {"torch": ("the cell of a PyTorch module of your project (nn.GRU, ..., your own step module): general t, "
                    "unrolled, checked against its own autograd", _add_torch, _run_torch)}
