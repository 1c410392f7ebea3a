"""matplotlib's mathtext parses shared by every renderer of a process, not kept per renderer.

matplotlib caches a parsed math text (a log axis's ``$\\mathdefault{10^{-4}}$``, a legend's ``$\\rho^n$``) per
``MathTextParser`` object, and every renderer makes its own parsers: saving one PDF figure with constrained
layout makes three renderers (two for the layout's passes, one for the file), so each label is parsed three
times, and again in the next figure.  Parsing is pyparsing work, about 7 ms a label: it was half the time
of a figure of the notes.  :func:`share` keys the cache by what the result depends on (the kind of output, the
text, the dpi, the font, antialiasing and the glyph flags) instead, so each label is parsed once per process.

The result of a parse depends on nothing of the parser object but its kind of output (``_parse_cached`` reads
``self._output_type``, and the class's font mapping and shared parser), so the figures are the same, byte for
byte (tests/test_mathtext_cache.py compares the PDFs).  Where matplotlib's ``_parse_cached`` is not the cached
method this was written for (another version), :func:`share` changes nothing and says so.
:func:`seqgrad.atomic.save_figure`, through which every figure of seqgrad is saved, calls it.
"""

from __future__ import annotations

import functools

#: the parses kept (matplotlib keeps 50 per parser); a figure of the notes has a few dozen distinct labels
SIZE = 1024


def share() -> bool:
    """Make every ``MathTextParser`` of this process share one cache of parses (idempotent); False where this
    matplotlib's parser is not the one this was written for (nothing is changed then)."""
    from matplotlib.mathtext import MathTextParser

    current = MathTextParser.__dict__.get("_parse_cached")
    if getattr(current, "shared_by_seqgrad", False):
        return True
    parse = getattr(current, "__wrapped__", None)
    if parse is None or not hasattr(current, "cache_info") or parse.__code__.co_varnames[:6] != (
            "self", "s", "dpi", "prop", "antialiased", "load_glyph_flags"):
        return False
    parsers: dict[str, MathTextParser] = {}  # one parser of each kind of output parses for all of that kind

    @functools.lru_cache(SIZE)
    def shared(kind, s, dpi, prop, antialiased, load_glyph_flags):
        return parse(parsers[kind], s, dpi, prop, antialiased, load_glyph_flags)

    @functools.wraps(parse)
    def _parse_cached(self, s, dpi, prop, antialiased, load_glyph_flags):
        parsers.setdefault(self._output_type, self)
        return shared(self._output_type, s, dpi, prop, antialiased, load_glyph_flags)

    _parse_cached.shared_by_seqgrad = True
    _parse_cached.cache_info = shared.cache_info
    _parse_cached.per_parser = current  # matplotlib's own, for undo
    MathTextParser._parse_cached = _parse_cached
    return True


def unshare() -> None:
    """Give matplotlib back its own per-parser cache (for a comparison)."""
    from matplotlib.mathtext import MathTextParser

    current = MathTextParser.__dict__.get("_parse_cached")
    if getattr(current, "shared_by_seqgrad", False):
        MathTextParser._parse_cached = current.per_parser
