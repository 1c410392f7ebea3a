"""One citation style for the course texts: a short key, a section and a line, ``week06 §BPTT:722``.

The course texts are the course's (``shared/seeds/``), not shipped with seqgrad;
a citation says which text, which section of it and which line, so that a
reader who has the texts finds every cited line.  ``docs/sources.md`` maps each
key to its text's title, sections and line ranges (a test keeps it in step
with :data:`TEXTS`).

>>> cite("week06", 722)
'week06 §Attention:722'
>>> cite("lesson", 95, 97)
'lesson §PE:95-97'
>>> normalize("seed 000 L946, L1191; seed 001 l.170")
'week06 §Block:946, week06 §Depth:1191; lesson §Decoder:170'
>>> normalize("000_a7606e3a9f173091.txt:896")
'week06 §Heads:896'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import SeqgradValueError

__all__ = ["Section", "Text", "TEXTS", "cite", "normalize", "section_of", "in_words"]


@dataclass(frozen=True)
class Section:
    tag: str
    title: str
    first: int
    last: int


@dataclass(frozen=True)
class Text:
    key: str
    seed: str  # the file name's prefix in shared/seeds/
    title: str
    sections: tuple[Section, ...]

    @property
    def last_line(self) -> int:
        return self.sections[-1].last


TEXTS: dict[str, Text] = {t.key: t for t in (
    Text("week06", "000", "Неделя 06 · Обучение представлениям последовательностей: от рекуррентной памяти к энкодерам "
         "Transformer (Week 06: learning sequence representations, from recurrent memory to Transformer encoders)", (
             Section("Intro", "Motivation, learning outcomes, prerequisites", 1, 29),
             Section("Task", "Order and available context; the prediction task", 30, 62),
             Section("RNN", "The scalar recurrent model: forward pass, prediction, loss (T = 3)", 63, 107),
             Section("BPTT", "Forward and backward operations (Table 3); shared-weight sums", 108, 187),
             Section("Paths", "Products along long paths; activations; tanh; the update", 188, 243),
             Section("Vector", "Two coordinates; the general vector forward and backward pass; per-position targets", 244, 325),
             Section("Jacobian", "Matrix paths, spectral bounds; the controlled experiments (Figure 3)", 326, 353),
             Section("Clip", "Norm clipping", 354, 361),
             Section("GRU", "The GRU (PyTorch convention)", 362, 383),
             Section("LSTM", "The LSTM", 384, 410),
             Section("PyTorch", "nn.RNN and a separate head", 411, 459),
             Section("Tokens", "Token ids and 5-coordinate embeddings", 460, 523),
             Section("PE", "Sinusoidal positional encoding; token plus position", 524, 593),
             Section("Attention", "One attention head, operation by operation", 594, 777),
             Section("Mask", "The causal mask", 778, 806),
             Section("Heads", "Two heads, concatenation, the output projection", 807, 931),
             Section("Block", "The pre-norm encoder block: LayerNorm, attention, MLP, the two additions", 932, 1158),
             Section("Depth", "Stacking blocks; why position is needed; pre-norm, post-norm and the backward path", 1159, 1196),
             Section("Tasks", "Task heads, padding, target shift, the practicum experiment, cost", 1197, 1315),
             Section("Summary", "Summary, misconceptions, exercises, further reading", 1316, 1367),
         )),
    Text("lesson", "001", "Трансформеры (Transformers), a Russian lesson", (
        Section("Intro", "Introduction and history", 1, 20),
        Section("Parallel", "Dropping recurrence: parallelism and complexity", 21, 50),
        Section("MHA", "Multi-head attention", 51, 82),
        Section("PE", "Positional encoding", 83, 125),
        Section("Encoder", "The encoder: self-attention, skip connections, LayerNorm", 126, 157),
        Section("Decoder", "The decoder and masked attention", 158, 189),
        Section("Tasks", "Practice: 30 tasks", 190, 257),
        Section("Mistakes", "Common mistakes", 258, 271),
        Section("Takeaways", "Key points, links, facts, tips", 272, 322),
    )),
    Text("lecture07", "003", "Лекция 7. Архитектуры (Lecture 7: architectures)", (
        Section("CNN", "The convolutional network", 1, 16),
        Section("RNN", "The recurrent network", 17, 28),
        Section("Attention", "Self-attention", 29, 42),
        Section("Positions", "Positions", 43, 50),
        Section("Compare", "Convolutions, memory and attention compared", 51, 58),
    )),
    Text("wiki", "004", "Трансформер (Transformer), neerc.ifmo.ru wiki, latest revision", (
        Section("Intro", "Introduction", 1, 4),
        Section("Architecture", "The transformer's architecture", 5, 12),
        Section("Encoder", "The encoder", 13, 38),
        Section("PE", "Positional encoding", 39, 52),
        Section("SelfAttention", "Self-attention", 53, 74),
        Section("MHA", "Multi-headed self-attention", 75, 85),
        Section("Decoder", "The decoder", 86, 104),
    )),
)}

_BY_SEED = {t.seed: t.key for t in TEXTS.values()}


def section_of(key: str, line: int) -> Section:
    """The section of text ``key`` that holds ``line``."""
    if key not in TEXTS:
        raise SeqgradValueError("key", key, "one of " + ", ".join(TEXTS))
    for s in TEXTS[key].sections:
        if s.first <= line <= s.last:
            return s
    raise SeqgradValueError("line", line, f"a line of {key} (1-{TEXTS[key].last_line})")


def cite(key: str, line: int, last: int | None = None) -> str:
    """``week06 §BPTT:722`` (or ``...:722-724`` for a range), the section found from the line."""
    section = section_of(key, line)
    span = f"{line}" if last is None or last == line else f"{line}-{last}"
    return f"{key} §{section.tag}:{span}"


_REF = re.compile(
    r"(?P<file>\b(?P<fseed>\d{3})_[0-9a-f]{16}(?:\.latest-revision)?\.txt:(?P<fa>\d+)(?:-(?P<fb>\d+))?)"
    r"|(?P<seed>\bseed\s?(?P<sseed>\d{3})\b(?:\s*(?:L|l\.)\s?(?P<sa>\d+)(?:\s?[-–]\s?(?P<sb>\d+))?)?)"
    r"|(?P<line>(?:\bL|\bl\.|\blines?\s)\s?(?P<la>\d+)(?:\s?[-–]\s?(?P<lb>\d+))?)")


def normalize(text: str, default: str | None = None) -> str:
    """Every course reference in ``text`` (``000_a7606e3a9f173091.txt:896``, ``seed000 L290-324``,
    ``seed 000 L784``, ``seed 001 l.170``; a bare ``L946`` or ``line 1175`` after a text was named,
    or in the text ``default``) rewritten as :func:`cite` writes it; everything else is kept, and so
    is a line number outside its text."""
    if not isinstance(text, str):
        raise SeqgradValueError("text", text, "a string")
    if default is not None and default not in TEXTS:
        raise SeqgradValueError("default", default, "one of " + ", ".join(TEXTS))
    current = default

    def ref(key, first, last, original):
        try:
            return cite(key, int(first), int(last) if last else None)
        except SeqgradValueError:
            return original

    def sub(m):
        nonlocal current
        if m["file"]:
            key = _BY_SEED.get(m["fseed"])
            return ref(key, m["fa"], m["fb"], m[0]) if key else m[0]
        if m["seed"]:
            key = _BY_SEED.get(m["sseed"])
            if key is None:
                return m[0]
            current = key
            return ref(key, m["sa"], m["sb"], m[0]) if m["sa"] else key
        if current is None:
            return m[0]
        return ref(current, m["la"], m["lb"], m[0])

    return _REF.sub(sub, text)


#: How a reader's text names each course text (a footnote of the notes: "Course notes, week 6, §5").
NAMES_IN_WORDS = {"week06": "Course notes, week 6", "lesson": "Lesson on Transformers", "lecture07": "Lecture 7",
                  "wiki": "Wiki article on the Transformer"}

_CITED = re.compile(r"\b(?P<key>" + "|".join(TEXTS) + r")\b(?:\s*§(?P<tag>\w+))?")


def section_number(key: str, tag: str) -> int:
    """The number of section ``tag`` of text ``key``, counted from 1 in the text's order (``docs/sources.md``)."""
    tags = [s.tag for s in TEXTS[key].sections]
    if tag not in tags:
        raise SeqgradValueError("tag", tag, f"a section of {key}: " + ", ".join(tags))
    return tags.index(tag) + 1


def in_words(citations: str) -> str:
    """Citations (``week06 §Paths, week06 §Jacobian; lesson``, line numbers dropped) as a textbook's footnote words
    them (older styles read by :func:`normalize` first): each text by its name, its sections by number in the text's order, each once; a piece that names no course
    text is kept only when it cites a publication (a year), so "derived Jacobian" is dropped.

    >>> in_words("week06 §Paths:188-204, week06 §Jacobian:326; week06 §Paths; lesson")
    'Course notes, week 6, §5 and §7; Lesson on Transformers'
    >>> in_words("Pascanu et al. 2013; week06; derived Jacobian")
    'Pascanu et al. 2013; Course notes, week 6'
    >>> in_words("seed 001 l.95, l.110-112 (task 21); seed 000 L530-544")
    'Lesson on Transformers, §4; Course notes, week 6, §13'
    """
    texts: dict[str, list[int]] = {}
    others: list[str] = []
    for piece in normalize(str(citations)).split(";"):
        found = list(_CITED.finditer(piece))
        if not found:
            piece = piece.strip(" .")
            if re.search(r"\b(1[89]|20)\d\d\b", piece) and piece not in others:
                others.append(piece)
            continue
        for m in found:
            numbers = texts.setdefault(m["key"], [])
            if m["tag"] and m["tag"] in {s.tag for s in TEXTS[m["key"]].sections}:
                n = section_number(m["key"], m["tag"])
                numbers.append(n) if n not in numbers else None
    said = list(others)
    for key, numbers in texts.items():
        marks = [f"§{n}" for n in sorted(numbers)]
        where = marks[0] if len(marks) == 1 else ", ".join(marks[:-1]) + " and " + marks[-1] if marks else ""
        said.append(NAMES_IN_WORDS[key] + (f", {where}" if where else ""))
    return "; ".join(said)


def markdown() -> str:
    """The text of ``docs/sources.md``: every key with its text's title, its sections and their lines."""
    out = ["# Course texts and how seqgrad cites them", "",
           "Every source seqgrad prints (checks, identities, printed claims, report.tex, the notes) cites a course",
           "text as `KEY §SECTION:LINE`, e.g. `week06 §BPTT:122-144`: the text, the section of it, and the line",
           "(or lines) in the text file. The texts are the course's and are not shipped with seqgrad; with them at",
           "hand, every cited line can be found. `seqgrad.sources.cite(key, line)` writes a citation and",
           "`seqgrad.sources.normalize(text)` rewrites the older styles (`seed 000 L784`, `000_....txt:896`).",
           "The notes' footnotes cite a text by its name and a section by its number (`in_words`: week06 §Paths is",
           "\"Course notes, week 6, §5\"), the column no. below.",
           "", "This page is generated from `seqgrad/sources.py` (a test keeps it in step).", ""]
    for t in TEXTS.values():
        out += [f"## `{t.key}`: {t.title}", "", f"File `shared/seeds/{t.seed}_*.txt`, lines 1-{t.last_line}.", "",
                "| no. | section | lines | contents |", "|---|---|---|---|"]
        out += [f"| §{n} | `§{s.tag}` | {s.first}-{s.last} | {s.title} |" for n, s in enumerate(t.sections, 1)]
        out.append("")
    return "\n".join(out)
