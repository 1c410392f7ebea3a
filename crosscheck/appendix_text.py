r"""The appendix's words: the course texts' plain-text formulas typeset as math, and citations a student can look up.

The printed claims and the texts' statements (:mod:`crosscheck.claims_catalogue`, :mod:`crosscheck.claims_statements`)
quote the course texts, whose formulas are plain text: ``h_6^(0)``, ``W_K^T``, ``dh_t/dh_(t-1) = diag(u_t)``,
``||p_i - p_j||^2``.  They are quotations, not SymPy expressions (SymPy would reorder their terms and turn their
printed decimals into fractions), so they are typeset here token by token, in the order and with the digits the text
wrote: :func:`formula_tex` sets one formula, :func:`quoted` finds the formulas in a sentence and sets the words around
them as text.

A citation (:func:`citation_tex`) names the text, the section's number and its title, as the notes' footnotes number
the sections (:func:`seqgrad.sources.in_words`), never a line number; a line a note refers to (``l.136``, ``line
991``) is its section's number.

>>> print(formula_tex("h_6^(0)"), formula_tex("W_K^T"), formula_tex("omega_i = 10000^(-2i/d)"))
h_{6}^{(0)} W_{K}^{\top} \omega_{i} = 10000^{-2i/d}
>>> print(formula_tex("dh_t/dh_(t-1) = diag(u_t)"))
\partial h_{t}/\partial h_{t-1} = \operatorname{diag}(u_{t})
>>> print(formula_tex("||p_i - p_j||^2 = sum_k 2 - 2 cos(|i - j| w_k)"))
\lVert p_{i} - p_{j}\rVert^{2} = \sum_{k} 2 - 2 \cos(\lvert i - j\rvert w_{k})
>>> print(quoted("mu_6 = 0.425 and sigma_6^2 = 0.329 (population variance of h_6^(0))"))
$\mu_{6} = 0.425$ and $\sigma_{6}^{2} = 0.329$ (population variance of $h_{6}^{(0)}$)
>>> print(quoted("the lesson's own encoder layer (l.136-138) is post-norm", key="lesson"))
the lesson's own encoder layer (\S{}5) is post-norm
>>> print(citation_tex("week06 §Paths:188-204, week06 §Jacobian:326-342 (long paths, J_t)"))
Course notes, week 6, \S{}5 \emph{Products along long paths} and \S{}7 \emph{Matrix paths} (long paths, $J_{t}$)
"""

from __future__ import annotations

import re

from seqgrad.derive.latex_settings import DEFAULT
from seqgrad.latex_table import tex_escape
from seqgrad.sources import NAMES_IN_WORDS, TEXTS, normalize, section_number, section_of

__all__ = ["formula_tex", "quoted", "citation_tex", "short_title", "lines_as_sections"]

#: names typeset as operators (``\sin``) or upright operator names; a word among them is a formula only where it is
#: applied (followed by a bracket, or, for the elementary functions, by a number or a symbol: ``sin 3``, ``log 4``)
ELEMENTARY = {"sin", "cos", "tan", "tanh", "exp", "log", "det", "max", "min", "arg"}
OPERATORS = {"diag", "softmax", "LN", "LayerNorm", "MultiHead", "Layer", "Norm", "Attn", "MH", "FNN", "SoftArgMax",
             "Var", "rms", "mean", "rowsum", "argmax", "dot", "sqrt", "ReLU", "relu", "sigmoid", "PE", "Concat",
             "Sublayer", "layernorm", "E"}
GREEK = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "kappa", "lambda", "mu", "nu", "xi",
         "pi", "rho", "sigma", "tau", "phi", "chi", "psi", "omega", "Sigma", "Pi", "Delta", "Omega", "Lambda"}
SPECIAL = {"eps": r"\epsilon", "inf": r"\infty", "yhat": r"\hat{y}", "xhat": r"\hat{x}", "pos": r"\mathrm{pos}"}
#: letters that stand for indices: a subscript of two of them (``K_uv``, ``(X * K)_ij``) is two indices, any other
#: subscript of more than one letter a word (``h_prev``, ``d_ff``, ``d_model``), set upright
INDEX_LETTERS = set("ijklmnpqrstuv")

_TOKEN = re.compile(
    r"(?P<code>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\.[A-Za-z_]\w{1,}(?:\.[A-Za-z_]\w*)*|[A-Za-z_]\w{1,}\.[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)"
    r"|(?P<range>(?<![\w.])\d+[-–]\d+(?![\w.]))"
    r"|(?P<number>\d{1,3}(?:,\d{3})+(?![\d.])|\d+(?:\.\d+)?(?:e-?\d+)?)"
    r"|(?P<ident>[A-Za-z][A-Za-z0-9]*(?:'+(?![A-Za-z]))?(?:_(?:\{[^{}]*\}|\((?:[^()]|\([^()]*\))*\)|[A-Za-z0-9]+(?:,[A-Za-z0-9]+)*))*(?:'+(?![A-Za-z]))?)"
    r"|(?P<sub>(?<=[)\]])_(?:\{[^{}]*\}|\([^()]*\)|[A-Za-z0-9]+))"
    r"|(?P<power>\^(?:\((?:[^()]|\([^()]*\))*\)|\{[^{}]*\}|\[[^\]]*\]|[A-Za-z0-9.]+))"
    r"|(?P<norm>\|\|)|(?P<abs>\|)"
    r"|(?P<rel>->|>=|<=|!=|==|=|<|>|≈|≤|≥|≠)"
    r"|(?P<op>[+\-*/·×−])"
    r"|(?P<dots>\.\.\.|…)"
    r"|(?P<open>[(\[])|(?P<close>[)\]])"
    r"|(?P<comma>,)|(?P<space>\s+)|(?P<other>.)", re.S)

_RELATIONS = {"->": r"\to", ">=": r"\geq", "<=": r"\leq", "!=": r"\neq", "==": "=", "≈": r"\approx", "≤": r"\leq",
              "≥": r"\geq", "≠": r"\neq", "<": "<", ">": ">", "=": "="}


def _tokens(s: str) -> list[tuple[str, str]]:
    return [(m.lastgroup, m.group(0)) for m in _TOKEN.finditer(s)]


#: The loss as the notes print it (the default notation's letter for L, ``\mathcal{L}``; a bare L is a depth).
_LOSS = DEFAULT.letters["L"]


def _is_derivative(tokens, i) -> bool:
    """Whether identifier ``i`` is the ``dX`` of a derivative written ``dX/dY`` (``dL/dx_0``, ``dh_t/dh_(t-1)``)."""
    def d_name(tok):
        return (tok[0] == "ident" and len(tok[1]) > 1 and tok[1][0] == "d" and tok[1][1] != "_"
                and tok[1].split("_")[0] not in OPERATORS | ELEMENTARY)

    if not d_name(tokens[i]):
        return False
    j = _next(tokens, i)
    if j is not None and tokens[j] == ("op", "/"):
        k = _next(tokens, j)
        return k is not None and d_name(tokens[k])
    p = _prev(tokens, i)
    if p is not None and tokens[p] == ("op", "/"):
        q = _prev(tokens, p)
        return q is not None and d_name(tokens[q])
    return False


def _next(tokens, i):
    j = i + 1
    while j < len(tokens) and tokens[j][0] == "space":
        j += 1
    return j if j < len(tokens) else None


def _prev(tokens, i):
    j = i - 1
    while j >= 0 and tokens[j][0] == "space":
        j -= 1
    return j if j >= 0 else None


def _sub(part: str) -> str:
    """One subscript as the text writes it (``t``, ``60``, ``(t-1)``, ``{i+u,j+v}``, ``att,6,0``)."""
    if part[:1] in "({":
        return formula_tex(part[1:-1])
    return ",".join(p if len(p) == 1 or p.isdigit() or set(p) <= INDEX_LETTERS and len(p) == 2 or re.fullmatch(r"[a-z]\d+", p)
                    else f"\\mathrm{{{p}}}" for p in part.split(","))


def _base(name: str) -> str:
    primes = len(name) - len(name.rstrip("'"))
    core = name.rstrip("'")
    if core in SPECIAL:
        out = SPECIAL[core]
    elif core in GREEK:
        out = "\\" + core
    elif core in ELEMENTARY:
        out = "\\" + core
    elif core in OPERATORS:
        out = f"\\operatorname{{{core}}}"
    elif re.fullmatch(r"[A-Za-z]\d+", core):  # A60, h0: a letter with its index run on
        out = f"{core[0]}_{{{core[1:]}}}"
    elif len(core) > 1:
        out = f"\\mathrm{{{core}}}"
    else:
        out = core
    return out + "'" * primes


def _ident(name: str) -> str:
    """An identifier with its subscripts: ``h_prev`` -> ``h_{\\mathrm{prev}}``, ``x_hat_2`` -> ``\\hat{x}_{2}``."""
    m = re.match(r"[A-Za-z][A-Za-z0-9]*'*", name)
    base, rest = m.group(0), name[m.end():]
    subs = re.findall(r"_(\{[^{}]*\}|\((?:[^()]|\([^()]*\))*\)|[A-Za-z0-9]+(?:,[A-Za-z0-9]+)*)", rest)
    trailing = "'" * (len(rest) - len(rest.rstrip("'")))
    if base == "sum":
        return "\\sum" + "".join(f"_{{{_sub(s)}}}" for s in subs)
    if subs and subs[0] == "hat":
        base_tex, subs = f"\\hat{{{base}}}", subs[1:]
    elif subs and subs[0] == "tilde":
        base_tex, subs = f"\\tilde{{{base}}}", subs[1:]
    else:
        base_tex = _base(base)
    return base_tex + "".join(f"_{{{_sub(s)}}}" for s in subs) + trailing


def _power(p: str) -> str:
    body = p[1:]
    if body in ("T", "⊤"):
        return r"^{\top}"
    if body[:1] == "(":
        inner = body[1:-1]
        # a label in brackets (the layer of h_6^(0)) keeps them; an exponent drops them
        return f"^{{({inner})}}" if re.fullmatch(r"\d+|[A-Za-z]", inner) else f"^{{{formula_tex(inner)}}}"
    if body[:1] == "{":
        return f"^{{{formula_tex(body[1:-1])}}}"
    if body[:1] == "[":
        return f"^{{[{formula_tex(body[1:-1])}]}}"
    return f"^{{{body}}}"


def _number(s: str) -> str:
    if "," in s:
        return s.replace(",", "{,}")
    m = re.fullmatch(r"(\d+(?:\.\d+)?)e(-?\d+)", s)
    if m:
        return ("" if m[1] == "1" else m[1] + r" \cdot ") + f"10^{{{int(m[2])}}}"
    return s


def formula_tex(s: str) -> str:
    """One plain-text formula of the course texts as LaTeX math (without the dollars), token by token, in the order
    and with the digits written: see the module docstring."""
    tokens = _tokens(s)
    out: list[str] = []
    norms = bars = 0
    i = 0
    while i < len(tokens):
        kind, t = tokens[i]
        if kind == "ident":
            p, n = _prev(tokens, i), _next(tokens, i)
            if t == "sqrt" and n is not None and tokens[n] == ("open", "("):
                close = _matching(tokens, n)
                out.append("\\sqrt{" + formula_tex("".join(x for _, x in tokens[n + 1:close])) + "}")
                i = close + 1
                continue
            if t == "o" and p is not None and n is not None and tokens[p][0] in ("ident", "close") \
                    and tokens[n][0] == "ident":
                out.append(r"\circ")
            elif _is_times(tokens, i):
                out.append(r"\times")
            elif t == "E" and n is not None and tokens[n] == ("open", "["):
                out.append(r"\mathbb{E}")
            elif _is_derivative(tokens, i):  # dL/dx_0: the L of a derivative is the loss, printed as the notes print it
                out.append(r"\partial " + (_LOSS if t[1:] == "L" else _ident(t[1:])))
            else:
                out.append(_ident(t))
        elif kind == "power":
            out.append(_power(t))
        elif kind == "sub":
            out.append(f"_{{{_sub(t[1:])}}}")
        elif kind == "number":
            out.append(_number(t))
        elif kind == "range":
            out.append(t.replace("–", "-"))
        elif kind == "norm":
            out.append(r"\lVert " if norms % 2 == 0 else r"\rVert")
            norms += 1
        elif kind == "abs":
            out.append(r"\lvert " if bars % 2 == 0 else r"\rvert")
            bars += 1
        elif kind == "rel":
            out.append(_RELATIONS[t])
        elif kind == "op":
            spaced = i > 0 and tokens[i - 1][0] == "space"
            out.append({"*": r"\ast" if spaced else r" \cdot ", "·": r"\cdot", "×": r"\times", "−": "-"}.get(t, t))
        elif kind == "dots":
            out.append(r"\dots")
        elif kind == "other" and t == "." :
            out.append(r" \cdot ")
        elif kind == "code":
            out.append(f"\\texttt{{{tex_escape(t)}}}")
        elif kind in ("open", "close", "comma", "space"):
            out.append(t if kind != "space" else " ")
        else:
            out.append(tex_escape(t))
        i += 1
    return re.sub(r" +", " ", "".join(out)).strip()


def _matching(tokens, i) -> int:
    depth = 0
    for j in range(i, len(tokens)):
        if tokens[j][0] == "open":
            depth += 1
        elif tokens[j][0] == "close":
            depth -= 1
            if depth == 0:
                return j
    return len(tokens) - 1


# --------------------------------------------------------------------------- finding the formulas of a sentence

def _strong(tokens, i) -> bool:
    """A token that only a formula has: a name with a subscript, a power, a Greek letter's name, a norm's bars, an
    operator applied to a bracket, a derivative ``dX/dY``."""
    kind, t = tokens[i]
    if kind in ("power", "norm", "sub"):
        return True
    if kind != "ident":
        return False
    core = t.rstrip("'").split("_")[0]
    n, p = _next(tokens, i), _prev(tokens, i)
    if t == "o":  # a composition of maps, LN o MH o Attn
        return p is not None and n is not None and tokens[p][1] in OPERATORS and tokens[n][1] in OPERATORS
    applied = n is not None and tokens[n][0] == "open" and n == i + 1
    return ("_" in t or "'" in t and len(core) == 1 or core in GREEK or core in SPECIAL or bool(re.fullmatch(r"[A-Za-z]\d+", t))
            or (core in OPERATORS | ELEMENTARY and applied) or (len(core) == 1 and applied and core not in "aAI")
            or _is_derivative(tokens, i))


def _mathy(tokens, i, depth: int) -> bool:
    kind, t = tokens[i]
    if kind in ("number", "power", "sub", "norm", "abs", "rel", "op", "dots", "open", "close", "space"):
        return True
    if kind == "comma":  # inside a bracket of the formula; a comma of the sentence ends it
        return depth > 0
    if kind == "other":
        p, n = i - 1, i + 1
        return (t == "." and 0 < i < len(tokens) - 1 and tokens[p][0] == "ident" and tokens[n][0] == "ident")
    if kind == "ident":
        core = t.rstrip("'")
        if i > 0 and tokens[i - 1] == ("other", "'") and len(core) == 1:  # the s of a possessive
            return False
        if _strong(tokens, i) or (len(core) == 1 and core not in "aAI"):
            return True
        if core in ELEMENTARY | OPERATORS:
            n, p = _next(tokens, i), _prev(tokens, i)
            return (p is not None and tokens[p] == ("ident", "o")) or n is not None and (tokens[n][0] in ("open", "number") or tokens[n] == ("ident", "o")
                                      or (core in ELEMENTARY and tokens[n][0] == "ident" and len(tokens[n][1]) == 1))
        p, n = _prev(tokens, i), _next(tokens, i)
        return core == "o" or (core in "aAI" and ((p is not None and tokens[p][0] in ("rel", "op"))
                                                   or (n is not None and tokens[n][0] in ("rel", "op"))))
    return False


def _is_times(tokens, i) -> bool:
    """Whether token ``i`` is the letter x as a product sign: spaced, between numbers or subscripted names
    (``8 x 64``, ``J d_v x d_model``)."""
    p, n = _prev(tokens, i), _next(tokens, i)
    return tokens[i] == ("ident", "x") and p is not None and n is not None and p < i - 1 and n > i + 1 and all(
        tokens[k][0] == "number" or "_" in tokens[k][1] for k in (p, n))


def _accepted(span) -> bool:
    """Whether a run of formula-like tokens is a formula: it has a token only formulas have, or an operator or a
    relation between two operands (``8 x 64 = 512``, ``2.45/4``)."""
    idx = [k for k, (kind, _) in enumerate(span) if kind != "space"]
    if any(_strong(span, k) for k in idx):
        return True
    times = [k for k in idx if _is_times(span, k)]  # 7 x 12: a product of two sizes, no relation after it
    operands = sum(1 for k in idx if span[k][0] in ("number", "ident") and k not in times)
    return operands >= 2 and any(span[k][0] in ("rel", "op") or k in times for k in idx)


def _trim(span):
    """A run without the spaces, punctuation and unmatched brackets at its ends (those belong to the sentence)."""
    lead, trail = [], []

    def unmatched_close(sp):
        depth = 0
        for kind, _ in sp:
            depth += (kind == "open") - (kind == "close")
            if depth < 0:
                return True
        return False

    def unmatched_open(sp):
        stack = []
        for k, (kind, _) in enumerate(sp):
            if kind == "open":
                stack.append(k)
            elif kind == "close" and stack:
                stack.pop()
        return stack[0] if stack else None

    while span:
        opens = sum(k == "open" for k, _ in span)
        closes = sum(k == "close" for k, _ in span)
        if span[-1][0] in ("space", "comma") or span[-1] == ("other", "'") or span[-1][0] in ("rel", "op") \
                or span[-1][0] == "open" or (span[-1][0] == "close" and closes > opens):
            trail.insert(0, span.pop())
        elif span[0][0] in ("space", "comma") or span[0][0] == "rel" or (span[0][0] == "open" and opens > closes) \
                or span[0] == ("other", "'"):
            lead.append(span.pop(0))
        elif unmatched_open(span) is not None:  # a bracket of the sentence opened inside the run: it ends before it
            cut = unmatched_open(span)
            trail = span[cut:] + trail
            del span[cut:]
        elif unmatched_close(span):  # a bracket of the sentence closed inside the run: the run ends before it
            depth, cut = 0, 0
            for k, (kind, _) in enumerate(span):
                depth += (kind == "open") - (kind == "close")
                if depth < 0:
                    cut = k
                    break
            trail = span[cut:] + trail
            del span[cut:]
        else:
            break
    return lead, span, trail


def quoted(s: str, key: str | None = None, escape=tex_escape) -> str:
    """A sentence of (or about) a course text: its formulas typeset (:func:`formula_tex`, in ``$...$``), its words as
    text (``escape``); with ``key``, the text quoted, each line it refers to (``l.136``, ``line 991``) as that line's
    section and each table it names as the text's (:func:`lines_as_sections`)."""
    s = str(s)
    if key is not None:
        s = lines_as_sections(s, key)
    tokens = _tokens(s)
    out, i, depth = [], 0, 0
    while i < len(tokens):
        if _mathy(tokens, i, 0) and tokens[i][0] not in ("space", "comma", "close"):
            j, depth = i, 0
            while j < len(tokens) and _mathy(tokens, j, depth):
                depth += (tokens[j][0] == "open") - (tokens[j][0] == "close")
                j += 1
            lead, span, trail = _trim(tokens[i:j])
            kinds = [kind for kind, _ in span if kind != "space"]
            if kinds == ["ident", "number"]:  # a name and its value in words ("sigma 1.0538"), not a product
                trail = span[1:] + trail
                span = span[:1]
            if span and _accepted(span):
                out.append(escape("".join(t for _, t in lead)))
                out.append("$" + formula_tex("".join(t for _, t in span)) + "$")
                out.append(escape("".join(t for _, t in trail)))
            else:
                out.append(_text(tokens[i:j], escape))
            i = j
        else:
            out.append(_text(tokens[i:i + 1], escape))
            i += 1
    return course_labels("".join(out))


_COURSE_LABEL = re.compile(r"(?:\b(?:the\s+)?[Cc]ourse(?:\s+notes)?(?:'s)?,?\s+)?\b(Figure|Table)(s?)\s+(?=\d)")


def course_labels(tex: str, whose: str = "the course's ") -> str:
    """A figure or a table of a course text as the notes cite it, ``the course's Fig.~3``, ``Tab.~16``: abbreviated
    and, unless the text's name says it already (``whose=""``), said to be the course's, so that it never reads as the
    notes' own Figure~3 or Table~3 (those are referred to in full, by ``\ref``).

    >>> course_labels("(course notes, Table 3, closed forms); Figure 3, left; Tables 30 and 31")
    "(the course's Tab.~3, closed forms); the course's Fig.~3, left; the course's Tabs.~30 and 31"
    >>> course_labels("Table 4", whose="")
    'Tab.~4'
    """
    return _COURSE_LABEL.sub(lambda m: whose + {"Figure": "Fig", "Table": "Tab"}[m[1]] + m[2] + ".~", tex)


def _text(tokens, escape) -> str:
    """Tokens that are words, not a formula: escaped, an arrow an arrow, a name of code (``nn.RNN``) in typewriter type."""
    return "".join("$\\to$" if t == "->" else f"\\texttt{{{escape(t)}}}" if kind == "code" else escape(t)
                   for kind, t in tokens)


_LINE_REF = re.compile(r"\b(?:l\.|lines?\s+|L)\s?(?P<a>\d+)(?:\s?[-–]\s?(?P<b>\d+))?\b")


def lines_as_sections(s: str, key: str) -> str:
    """``s`` (about text ``key``) with each line it refers to (``l.136-138``, ``line 991``, ``L946``) as that line's
    section of the text, ``§5`` (a line outside the text is kept).

    >>> lines_as_sections("as at l.9 (and l.87 says it so)", "lesson")
    'as at §1 (and §4 says it so)'
    >>> lines_as_sections("(Table 3, closed forms)", "week06")
    '(course notes, Table 3, closed forms)'
    """
    def sub(m):
        try:
            return f"§{section_number(key, section_of(key, int(m['a'])).tag)}"
        except ValueError:
            return m.group(0)

    s = re.sub(r"(§\d+)(?:,\s*\1\b)+", r"\1", _LINE_REF.sub(sub, s))
    if key == "week06":  # a table of the text, never one of the notes' own tables (which the appendix numbers too)
        s = _TABLE.sub(lambda m: m[0] if m[1] else "course notes, " + m[0], s)
    return s


_TABLE = re.compile(r"(course notes, |week 6, )?\bTables? \d+")


# --------------------------------------------------------------------------- citations

def short_title(key: str, tag: str) -> str:
    """The head of a section's title (up to its first colon, semicolon, comma or bracket): what a reader looks for
    in the text's contents.

    >>> short_title("week06", "Block")
    'The pre-norm encoder block'
    """
    title = next(s.title for s in TEXTS[key].sections if s.tag == tag)
    return re.split(r"\s*[:;,(]", title)[0].strip()


_LINES = r"\d+(?:\s*[-–]\s*\d+)?(?:,\s*\d+(?:\s*[-–]\s*\d+)?)*"
_CITE = re.compile(
    r"(?<!the )\b(?P<key>" + "|".join(TEXTS) + r")\b(?=\s*(?:§|Tables?\b|\()|\s*$|\s*[;,)])"
    r"(?:\s*§(?:(?P<tagl>[^:;,()§]+?):(?P<lines>" + _LINES + r")|(?P<tag>[\w/]+)))?"
    r"(?P<tables>,?\s+Tables?\s+\d+(?:(?:,\s*|\s*[-–]\s*|\s+and\s+)\d+)*)?")


def _sections(m) -> list[str]:
    """The tags of the sections a citation match names (by its lines where it has them)."""
    key = m["key"]
    if m["lines"]:
        tags, order = [], [x.tag for x in TEXTS[key].sections]
        for first, last in re.findall(r"(\d+)(?:\s*[-–]\s*(\d+))?", m["lines"]):
            try:  # every section a range of lines reaches into
                a, b = (order.index(section_of(key, int(n)).tag) for n in (first, last or first))
            except ValueError:
                continue
            tags += [t for t in order[a:b + 1] if t not in tags]
        return tags
    if m["tag"] and m["tag"] in {s.tag for s in TEXTS[key].sections}:
        return [m["tag"]]
    if m["tag"]:  # a pair of sections, ``GRU/LSTM``
        return [t for t in m["tag"].split("/") if t in {s.tag for s in TEXTS[key].sections}]
    return []


def tagged_by_lines(source: str) -> str:
    """``source`` with each citation that gives lines (``lesson §Formula:170``) written with the tags of the sections
    those lines are in (``lesson §Decoder``), as the appendix reads it: a footnote then names the section the
    appendix names, whatever words the citation's own tag has.

    >>> tagged_by_lines("lesson §Formula:170 (M_ij); lecture07 §Convolutional network:9")
    'lesson §Decoder (M_ij); lecture07 §CNN'
    """
    def retag(m):
        tags = _sections(m)
        return ", ".join(f"{m['key']} §{t}" for t in tags) + (m["tables"] or "") if m["lines"] and tags else m[0]

    return _CITE.sub(retag, normalize(str(source)))


def _section_words(key: str, tags: list[str], titles: bool) -> str:
    numbers = [section_number(key, t) for t in tags]
    if len(numbers) > 2 and numbers == list(range(numbers[0], numbers[-1] + 1)):  # a run of sections: its ends
        return f"\\S{{}}{numbers[0]}--{numbers[-1]}"
    marks = [f"\\S{{}}{section_number(key, t)}" + (f" \\emph{{{tex_escape(short_title(key, t))}}}" if titles else "")
             for t in tags]
    return marks[0] if len(marks) == 1 else ", ".join(marks[:-1]) + " and " + marks[-1] if marks else ""


def citation_tex(source, notation=None, key: str | None = None) -> str:
    """A source (a check's, an identity's, a claim's) in the appendix's one citation scheme: each course text by
    its name, each section by its number and title (``Course notes, week 6, §17 The pre-norm encoder block``), a
    table by its number in the text (``Course notes, week 6, Table 16``); a citation inside a note in brackets by
    its section number only, and the text's name where the note cites another text.  The words between the
    citations are set by :func:`quoted` (``key``: the text they are about, whose lines they may name), formulas in
    backquotes by the notation's printer."""
    recorded = normalize(str(getattr(source, "recorded", source)))
    def render(words):
        return _words(words, notation, key)

    matches = list(_CITE.finditer(recorded))
    key = key or (matches[0]["key"] if matches else None)
    groups: list[list] = []  # consecutive citations of one text (``week06 §Paths:188, week06 §Jacobian:326``)
    for m in matches:
        if groups and groups[-1][-1]["key"] == m["key"] and \
                re.fullmatch(r"\s*(?:,|and)\s*", recorded[groups[-1][-1].end():m.start()]):
            groups[-1].append(m)
        else:
            groups.append([m])
    out, at, outer_key, said_before = [], 0, None, set()
    for group in groups:
        start, end, cited = group[0].start(), group[-1].end(), group[0]["key"]
        inside = recorded[:start].count("(") > recorded[:start].count(")")
        tags = []
        for m in group:
            tags += [t for t in _sections(m) if t not in tags]
        tables = "".join(m["tables"] or "" for m in group).lstrip(",").strip()
        between = recorded[at:start]
        if not inside and (cited, tuple(tags), tables) in said_before and re.search(r";\s*$", between) \
                and re.match(r"\s*(;|$)", recorded[end:]):  # the same place again: said once
            out.append(render(between.rstrip()[:-1]))
            at = end
            continue
        said_before.add((cited, tuple(tags), tables))
        out.append(render(between))
        if inside and cited == outer_key:
            said = _section_words(cited, tags, titles=False) or "there"
        else:
            said = ", ".join(p for p in (NAMES_IN_WORDS[cited], _section_words(cited, tags, titles=not inside)) if p)
        if tables:
            said += ", " + course_labels(tex_escape(tables), whose="")
        out.append(said)
        if not inside:
            outer_key = cited
        at = end
    out.append(render(recorded[at:]))
    return "".join(out).strip()


def _words(s: str, notation, key=None) -> str:
    """Words between citations: formulas in backquotes by the notation's printer (:class:`derive.prose.Prose`), the
    texts' plain-text formulas by :func:`formula_tex`."""
    from seqgrad.derive.prose import Prose

    parts = re.split(r"(`[^`]*`)", s)
    return "".join(Prose(p).latex(notation) if p.startswith("`") else quoted(p, key) for p in parts if p)
