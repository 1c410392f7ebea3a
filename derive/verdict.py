"""What :func:`derive.verify` answers: a :class:`Verdict` (proved, holds numerically, refuted or undecided, with
the reason, the evidence and what was sampled) and the command's exit status for each."""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp

STATUSES = ("proved", "holds", "refuted", "undecided")
#: exit status of ``seqgrad verify`` per verdict (2 is bad input, raised before any verdict)
EXIT_CODES = {"proved": 0, "holds": 0, "refuted": 1, "undecided": 3}


@dataclass
class Verdict:
    """The outcome of :func:`verify`."""

    status: str
    lhs: object
    rhs: object
    detail: str
    points: int = 0
    counterexample: dict = field(default_factory=dict)
    seconds: float = 0.0
    statement: str = ""
    assumptions: str = ""
    domain: list = field(default_factory=list)  # conditions where a side is defined that no assumption gives
    sampled: dict = field(default_factory=dict)
    typed: tuple = ()  # the sides as typed, unevaluated (exp(log(x)), not x), for the LaTeX display

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.status]

    def __bool__(self) -> bool:
        return self.status in ("proved", "holds")

    def _where(self) -> str:
        if self.domain:
            return " where defined: " + ", ".join(self.domain)
        return f" for {self.assumptions}" if self.assumptions else ""

    def words(self) -> str:
        if self.status == "proved":
            return "proved" + self._where()
        if self.status == "holds":
            return f"holds numerically at {self.points} points{self._where()} (not proved)"
        if self.status == "refuted":
            at = ", ".join(f"{k} = {v}" for k, v in self.counterexample.items())
            return "refuted" + (f" at {at}" if at else "")
        return "undecided"

    def text(self) -> str:
        return self.statement or f"{_text(self.lhs)} = {_text(self.rhs)}"

    def line(self) -> str:
        """One line of text: the statement as typed, the verdict and how it was reached."""
        return f"{self.text()}: {self.words()} ({self.detail}; {self.seconds:.2f} s)"

    def latex(self) -> str:
        """A complete display (``align*``) for notes: the statement and the verdict."""
        from .latex_layout import display

        lhs, rhs = (sp.Tuple(*x) if isinstance(x, tuple) else x for x in (self.typed or (self.lhs, self.rhs)))
        relation = sp.Ne if self.status == "refuted" else sp.Eq
        return display([(relation(lhs, rhs, evaluate=False), f"({self.words()})")])

    def _repr_latex_(self) -> str:
        return self.latex()

    def as_dict(self) -> dict:
        return {"status": self.status, "statement": self.text(), "lhs": _text(self.lhs), "rhs": _text(self.rhs),
                "verdict": self.words(), "detail": self.detail, "points": self.points,
                "counterexample": {k: str(v) for k, v in self.counterexample.items()}, "seconds": round(self.seconds, 3),
                "exit_code": self.exit_code, "assumptions": self.assumptions, "domain": list(self.domain),
                "sampled": self.sampled}


def _text(x) -> str:
    if isinstance(x, tuple):
        return "(" + ", ".join(sp.sstr(e) for e in x) + ")"
    return sp.sstr(x)
