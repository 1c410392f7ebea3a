r"""The works the notes cite by author and year, as the notes' reference list.

The sections, captions and footnotes name a work as the text does ("Xiong et al. 2020", "Pascanu, Mikolov and
Bengio (2013)"); :func:`section` lists, after the last section, every work of :data:`REFERENCES` that the
document's body names, in alphabetical order of the first author.  A citation the table does not know is caught
by the notes' tests (every author-year citation of the body has its entry).

>>> [r.key for r in cited("as Vaswani et al. 2017 and Xiong et al. (2020) show")]
['Vaswani 2017', 'Xiong 2020']
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Reference", "REFERENCES", "cited", "course_texts", "section", "CITATION"]


@dataclass(frozen=True)
class Reference:
    """One work: ``key`` (first author and year), the ``names`` the notes cite it by (regular expressions over the
    LaTeX source) and its entry, in LaTeX."""

    key: str
    names: tuple[str, ...]
    entry: str


REFERENCES = (
    Reference("Ba 2016", (r"Ba et al\.,? \(?2016",),
              r"J.~L.~Ba, J.~R.~Kiros and G.~E.~Hinton. Layer normalization. arXiv:1607.06450, 2016."),
    Reference("Cho 2014", (r"Cho et al\.,? \(?2014",),
              r"K.~Cho, B.~van Merri\"enboer, C.~Gulcehre, D.~Bahdanau, F.~Bougares, H.~Schwenk and Y.~Bengio. Learning "
              r"phrase representations using RNN encoder-decoder for statistical machine translation. EMNLP 2014."),
    Reference("He 2016", (r"He et al\.,? \(?2016",),
              r"K.~He, X.~Zhang, S.~Ren and J.~Sun. Deep residual learning for image recognition. CVPR 2016."),
    Reference("Hochreiter 1991", (r"Hochreiter,? \(?1991",),
              r"S.~Hochreiter. Untersuchungen zu dynamischen neuronalen Netzen. Diploma thesis, Technische "
              r"Universit\"at M\"unchen, 1991."),
    Reference("Hochreiter 1997", (r"Hochreiter (\\&|and) Schmidhuber,? \(?1997",),
              r"S.~Hochreiter and J.~Schmidhuber. Long short-term memory. Neural Computation 9(8), 1997."),
    Reference("Pascanu 2013", (r"Pascanu et al\.,? \(?2013", r"Pascanu, Mikolov and Bengio,? \(?2013"),
              r"R.~Pascanu, T.~Mikolov and Y.~Bengio. On the difficulty of training recurrent neural networks. ICML 2013."),
    Reference("Vaswani 2017", (r"Vaswani et al\.,? \(?2017",),
              r"A.~Vaswani, N.~Shazeer, N.~Parmar, J.~Uszkoreit, L.~Jones, A.~N.~Gomez, {\L}.~Kaiser and I.~Polosukhin. "
              r"Attention is all you need. NeurIPS 2017."),
    Reference("Xiong 2020", (r"Xiong et al\.,? \(?2020",),
              r"R.~Xiong, Y.~Yang, D.~He, K.~Zheng, S.~Zheng, C.~Xing, H.~Zhang, Y.~Lan, L.~Wang and T.-Y.~Liu. On "
              r"layer normalization in the Transformer architecture. ICML 2020."),
    Reference("Zhang 2019", (r"Zhang (\\&|and) Sennrich,? \(?2019",),
              r"B.~Zhang and R.~Sennrich. Root mean square layer normalization. NeurIPS 2019."),
)

#: an author-year citation as the notes write one: "Name et al. 2020", "Name and Name (2019)", "A, B and C, 2013",
#: "Name (1991)"
CITATION = re.compile(r"\b[A-Z][a-z]+(?: et al\.,? \(?|(?:, [A-Z][a-z]+)* (?:and|\\&) [A-Z][a-z]+,? \(?| \()(?:19|20)\d\d\b")


def cited(document: str) -> list[Reference]:
    """The works of :data:`REFERENCES` that ``document`` names, in the table's (alphabetical) order."""
    return [r for r in REFERENCES if any(re.search(name, document) for name in r.names)]


def _cited_sections(document: str, name: str) -> list[int]:
    """The section numbers ``document`` cites course text ``name`` by ("Course notes, week 6, \\S{}5 and \\S{}7")."""
    mark = r"(?:\\S\{\}|§)(\d+)"
    numbers: set[int] = set()
    for m in re.finditer(re.escape(name) + rf"((?:,? {mark})(?:(?:,| and) {mark})*)", document):
        numbers.update(int(n) for n in re.findall(mark, m.group(1)))
    return sorted(numbers)


def _its_own(title: str) -> str:
    """A course text's "Table 3" or "Figure 3" as the text's own ("the text's Tab.~3"), never as the notes' numbers."""
    return re.sub(r"\b(Table|Figure) (\d+)", lambda m: f"the text's {m.group(1)[:3]}.~{m.group(2)}", title)


def course_texts(document: str) -> list[str]:
    """An entry for each course text ``document`` cites by name (:data:`seqgrad.sources.NAMES_IN_WORDS`): its name
    as the footnotes give it, its title (Cyrillic set in Russian, :func:`seqgrad.latex_table.with_cyrillic`) and the
    titles of the sections cited, by their numbers."""
    from seqgrad.latex_table import with_cyrillic
    from seqgrad.sources import NAMES_IN_WORDS, TEXTS

    out = []
    for key, name in NAMES_IN_WORDS.items():
        if name not in document:
            continue
        text = TEXTS[key]
        numbers = _cited_sections(document, name)
        entry = f"\\emph{{{name}}}: {with_cyrillic(text.title.replace(' · ', ': '))}."
        if numbers:
            # a section's title holds semicolons of its own: set in italics, one after another
            entry += " Sections cited: " + ", ".join(
                f"\\S{{}}{n} \\emph{{{_its_own(with_cyrillic(text.sections[n - 1].title))}}}" for n in numbers) + "."
        out.append(entry)
    return out


def section(body: str) -> str:
    """The notes' reference list for a document whose body is ``body`` ("" when it cites none): an unnumbered
    section, in the table of contents; the works by author and year, then the course texts by name."""
    works, texts = cited(body), course_texts(body)
    if not works and not texts:
        return ""
    out = "\\section*{References}\\addcontentsline{toc}{section}{References}\n\n"
    if works:
        out += "\\begin{itemize}\n" + "\n".join(f"\\item {r.entry}" for r in works) + "\n\\end{itemize}\n"
    if texts:
        out += ("\n\\paragraph{The course texts.} The footnotes cite the course's own texts by name and their "
                "sections by number, in the order each text gives them.\n\\begin{itemize}\n"
                + "\n".join(f"\\item {entry}" for entry in texts) + "\n\\end{itemize}\n")
    return out
