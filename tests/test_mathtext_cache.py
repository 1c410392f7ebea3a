"""matplotlib's math-text parses shared by every renderer (seqgrad.mathtext_cache): the same files, fewer parses."""

import io

import pytest

pytest.importorskip("matplotlib")

from seqgrad import mathtext_cache  # noqa: E402


def _figure_pdf() -> bytes:
    """A figure of the notes' kind (log axis, math in the legend and the labels, constrained layout) as PDF bytes,
    without a creation date (the one field that differs between two saves)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5, 4), layout="constrained")
    ax = fig.add_subplot()
    n = list(range(1, 40))
    for rho in (0.5, 0.9, 1.1):
        ax.semilogy(n, [rho ** k for k in n], label=rf"$\rho = {rho}$")
    ax.set_xlabel(r"path length $n$")
    ax.set_ylabel(r"$\rho^n$")
    ax.legend()
    buf = io.BytesIO()
    fig.savefig(buf, format="pdf", metadata={"CreationDate": None})
    return buf.getvalue()


@pytest.fixture
def restore():
    yield
    mathtext_cache.share()  # the state every seqgrad figure save leaves


def test_shared_parses_give_the_same_file_byte_for_byte(restore):
    mathtext_cache.unshare()
    own = _figure_pdf()
    assert mathtext_cache.share()
    shared = _figure_pdf()
    assert shared == own


def test_each_label_is_parsed_once_per_process_not_once_per_renderer(restore):
    from matplotlib.mathtext import MathTextParser

    assert mathtext_cache.share()
    assert mathtext_cache.share()  # idempotent: still one shared cache
    _figure_pdf()
    before = MathTextParser._parse_cached.cache_info()
    _figure_pdf()  # the same figure again: new renderers, every label already parsed
    after = MathTextParser._parse_cached.cache_info()
    assert after.misses == before.misses
    assert after.hits > before.hits


def test_unshare_gives_matplotlib_its_own_cache_back(restore):
    from matplotlib.mathtext import MathTextParser

    mathtext_cache.share()
    mathtext_cache.unshare()
    assert not getattr(MathTextParser.__dict__["_parse_cached"], "shared_by_seqgrad", False)
    _figure_pdf()  # still draws
