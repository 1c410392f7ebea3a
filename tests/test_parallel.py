"""The parallel runner of seqgrad check / latex: every task reported once, in a fixed order, whatever the
schedule; a raising task or a dying worker costs only that task; derivations shared within a run."""

from __future__ import annotations

import os

import pytest

from seqgrad.crosscheck import latexdoc, latexrun, parallel
from seqgrad.crosscheck.registry import Check, all_checks, groups_of, run_checks
from seqgrad.crosscheck.tolerance import Outcome
from seqgrad.numeric.device import one_thread
from seqgrad import runcache

needs_fork = pytest.mark.skipif(not parallel.can_fork(), reason="the parallel runner needs fork (Linux)")


def _value(x):
    return x * x


def _boom():
    raise ArithmeticError("bad task")


def _die():
    os._exit(3)  # a worker killed mid-task (a segfault, the OOM killer)


def _tasks(*runs):
    return [parallel.Task(run, lambda reason: f"lost: {reason}", weight) for run, weight in runs]


@needs_fork
@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_every_task_reported_once(jobs):
    tasks = _tasks(*[((lambda i=i: _value(i)), i % 3) for i in range(7)])
    got = dict(parallel.run_tasks(tasks, jobs))
    assert got == {i: i * i for i in range(7)}


def test_heaviest_first_in_serial():
    order = [i for i, _ in parallel.run_tasks(_tasks((lambda: 0, 1.0), (lambda: 1, 5.0), (lambda: 2, 1.0)), 1)]
    assert order == [1, 0, 2]  # ties keep the given order


@needs_fork
@pytest.mark.parametrize("jobs", [1, 2])
def test_raising_task_is_lost_not_fatal(jobs):
    got = dict(parallel.run_tasks(_tasks((lambda: 1, 1), (_boom, 1), (lambda: 3, 1)), jobs))
    assert got[0] == 1 and got[2] == 3
    assert got[1].startswith("lost: ArithmeticError: bad task")


@needs_fork
def test_dead_worker_costs_only_its_task():
    tasks = _tasks((_die, 9), *[((lambda i=i: i), 1) for i in range(1, 6)])
    got = dict(parallel.run_tasks(tasks, 2))
    assert got[0] == "lost: its worker process ended (exit code 3)"
    assert {i: got[i] for i in range(1, 6)} == {i: i for i in range(1, 6)}


_held = []


def _grow_and_report_pid():
    _held.append(bytearray(8 * 1024 * 1024))  # 8 MiB written by this worker
    return os.getpid()


@needs_fork
def test_a_worker_ended_by_sigterm_cleans_up_and_exits_without_a_traceback(tmp_path):
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import os, signal, sys
        from seqgrad.crosscheck import parallel

        class Terminated(BaseException):  # as seqgrad's command line raises on SIGTERM
            pass

        def on_sigterm(signum, frame):
            raise Terminated

        def ended():
            try:
                os.kill(os.getpid(), signal.SIGTERM)
            finally:
                open(sys.argv[1], "w").write("cleaned up")

        signal.signal(signal.SIGTERM, on_sigterm)
        tasks = [parallel.Task(ended, lambda reason: "lost: " + reason), parallel.Task(lambda: 1, str)]
        print(sorted(parallel.run_tasks(tasks, 2)))
    """)
    mark = tmp_path / "finally.txt"
    proc = subprocess.run([sys.executable, "-c", code, str(mark)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[(0, 'lost: its worker process ended (exit code 143)'), (1, 1)]"
    assert "Traceback" not in proc.stderr and mark.read_text() == "cleaned up"


@needs_fork
def test_a_worker_that_grew_past_the_limit_is_replaced(monkeypatch):
    tasks = _tasks(*[(_grow_and_report_pid, 1) for _ in range(4)])
    kept = dict(parallel.run_tasks(tasks, 1 + 1))
    assert len(set(kept.values())) <= 2  # under the limit: two workers take every task
    monkeypatch.setattr(parallel, "RECYCLE_MIB", 4)
    recycled = dict(parallel.run_tasks(tasks, 2))
    assert len(set(recycled.values())) == 4  # each task grew its worker past 4 MiB: a fresh worker for the next
    assert os.getpid() not in recycled.values()
    monkeypatch.setattr(parallel, "RECYCLE_MIB", 64)
    assert len(set(dict(parallel.run_tasks(tasks, 2, recycle_mib=4)).values())) == 4  # the caller's own limit


def _fake(name, group, outcome):
    return Check(name, "test", group, lambda ctx: outcome(ctx))


def _seeded(ctx):
    return Outcome(float(ctx.rng().random()), 0.0, True, ctx.name)


@needs_fork
def test_run_checks_same_results_and_order_for_any_jobs():
    items = [_fake(f"g{g}.c{c}", f"g{g}", _seeded) for g in (2, 0, 1) for c in range(3)]
    items.insert(4, _fake("g0.crash", "g0", lambda ctx: 1 / 0))
    serial = run_checks(items, jobs=1)
    for jobs in (2, 4):
        other = run_checks(items, jobs=jobs)
        assert [r.name for r in other] == [i.name for i in items]
        assert [{**r.as_dict(), "seconds": 0} for r in other] == [{**r.as_dict(), "seconds": 0} for r in serial]
    crash = next(r for r in serial if r.name == "g0.crash")
    assert crash.status == "error" and "ZeroDivisionError" in crash.detail


@needs_fork
def test_a_dying_group_is_reported_as_errors():
    items = [_fake("a.ok", "a", _seeded), _fake("b.die", "b", lambda ctx: _die()), _fake("b.after", "b", _seeded)]
    results = {r.name: r for r in run_checks(items, jobs=2)}
    assert results["a.ok"].status == "pass"
    for name in ("b.die", "b.after"):
        assert results[name].status == "error" and "worker process ended (exit code 3)" in results[name].detail


def _pid_outcome(ctx):
    return Outcome(0.0, 0.0, True, str(os.getpid()))


@needs_fork
@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_an_extra_task_joins_its_group_in_the_same_process(jobs):
    from seqgrad.crosscheck.registry import run_with_tasks

    items = [_fake(f"{g}.c{c}", g, _pid_outcome) for g in ("a", "b", "c") for c in range(2)]
    extra = _tasks((os.getpid, 1), (os.getpid, 1), (_boom, 1), (lambda: "alone", 1))
    results, values = run_with_tasks(items, extra, jobs=jobs, joins=["b", "c", "a", "no such group"])
    pid = {r.group: r.detail for r in results}
    assert [r.name for r in results] == [i.name for i in items] and all(r.passed for r in results)
    assert values[:2] == [int(pid["b"]), int(pid["c"])]  # drawn where its group's caches are
    assert values[2].startswith("lost: ArithmeticError: bad task")  # a raising extra costs only itself
    assert values[3] == "alone"


@needs_fork
def test_a_dying_joined_task_loses_its_group_and_its_extras():
    from seqgrad.crosscheck.registry import run_with_tasks

    items = [_fake("a.ok", "a", _seeded), _fake("b.ok", "b", _seeded)]
    results, values = run_with_tasks(items, _tasks((_die, 1)), jobs=2, joins=["b"])
    by_name = {r.name: r for r in results}
    assert by_name["a.ok"].status == "pass" and by_name["b.ok"].status == "error"
    assert values == ["lost: its worker process ended (exit code 3)"]


def test_groups_keep_order():
    items = all_checks("encoder.*")
    assert [c for g in groups_of(items) for c in g] == items


def test_a_group_splits_into_its_shards_in_order():
    from dataclasses import replace

    items = [replace(_fake(f"g.{i}", "g", _seeded), shard=shard) for i, shard in enumerate("abab")]
    assert [[c.name for c in g] for g in groups_of(items)] == [["g.0", "g.2"], ["g.1", "g.3"]]
    identities = groups_of(all_checks("identity:*"))
    assert len(identities) > 1 and {c.group for g in identities for c in g} == {"identities"}
    assert all(len({c.shard for c in g}) == 1 for g in identities)  # one catalogue family per task


@needs_fork
def test_real_groups_same_report_serial_and_parallel():
    items = all_checks("encoder.*") + all_checks("gated.fact.*")
    strip = lambda rs: [{**r.as_dict(), "seconds": 0} for r in rs]  # noqa: E731
    with one_thread(), runcache.scope():  # as seqgrad check runs them: one torch thread in every mode
        serial = run_checks(items, jobs=1)
    with one_thread(), runcache.scope():
        assert strip(run_checks(items, jobs=2)) == strip(serial)
    assert all(r.passed for r in serial)


# ----------------------------------------------------------------------------- the run cache

def test_runcache_only_inside_a_scope():
    calls = []

    @runcache.memo
    def derive(n, k=1):
        calls.append((n, k))
        return [n, k]

    derive(1), derive(1)
    assert len(calls) == 2
    with runcache.scope():
        first = derive(2)
        assert derive(2) is first and len(calls) == 3
        derive([3])  # unhashable: computed, not kept
        with runcache.scope():  # nested: the same run
            assert derive(2) is first
        assert derive(2) is first
        assert runcache.active()
    assert not runcache.active()
    assert derive(2) is not first  # the run is over: nothing kept
    assert runcache.stats()["test_runcache_only_inside_a_scope.<locals>.derive"] == (1, 3)


def test_activation_facts_share_their_proofs_in_a_run():
    from seqgrad.derive import activation_facts as af

    with runcache.scope():
        for name in ("sigmoid_prime_max", "hochreiter", "pascanu_sigmoid"):
            assert af.get(name).prove().holds
        stats = runcache.stats()
    assert stats["_sigmoid_prime_max"] == (1, 2)  # sympy.maximum once, not three times


# ----------------------------------------------------------------------------- LaTeX sections

@needs_fork
def test_latex_parallel_document_is_the_serial_one():
    kw = dict(sections="positional,attention", proof_seconds=None)
    assert latexdoc.render(jobs=2, **kw) == latexdoc.render(jobs=1, **kw)


@needs_fork
def test_latex_parallel_document_with_figures_is_the_serial_one(tmp_path):
    """In parallel each figure set is a task of its own and the sections leave placeholders: the same document."""
    docs = {}
    for jobs in (1, 2):
        root = tmp_path / f"jobs{jobs}"
        docs[jobs] = latexdoc.render("positional,conv", tex_dir=root, figures_dir=root / "figures", jobs=jobs,
                                     appendix=False)
    assert docs[1] == docs[2] and docs[2].count("\\includegraphics") == 2 and "%%seqgrad-figure" not in docs[2]


def _recording_head_start(monkeypatch) -> list:
    """HeadStart as latexrun uses it, recording what it was handed: the names of the tasks' sections or sets."""
    handed = []

    class Recording(parallel.HeadStart):
        def __init__(self, tasks):
            handed.append(["+".join(section.name for section, _ in t.run.args[0]) if t.run.func is latexrun._build_all
                           else t.run.args[0] for t in tasks])
            super().__init__(tasks)

    monkeypatch.setattr(parallel, "HeadStart", Recording)
    return handed


@needs_fork
def test_latex_sections_that_draw_nothing_start_before_matplotlib_is_imported(tmp_path, monkeypatch):
    """The chapter: every section leaves placeholders, so all start in the worker forked ahead and the figure sets
    go to the workers forked after matplotlib's warm-up; the document is the serial one."""
    handed = _recording_head_start(monkeypatch)
    docs = {}
    for jobs in (1, 2):
        root = tmp_path / f"jobs{jobs}"
        docs[jobs] = latexdoc.render("positional,conv", tex_dir=root, figures_dir=root / "figures", jobs=jobs,
                                     appendix=False)
    assert handed == [["positional", "conv"]]  # jobs=1 builds in this process: no head start
    assert docs[1] == docs[2]


@needs_fork
def test_latex_handout_sections_that_draw_start_after_matplotlib_and_the_document_is_the_serial_one(tmp_path, monkeypatch):
    """The handout: a section that includes a figure draws it in its own task, after the warm-up; one that includes
    none (rnn) starts ahead; the same document either way."""
    handed = _recording_head_start(monkeypatch)
    docs = {}
    for jobs in (1, 2):
        root = tmp_path / f"jobs{jobs}"
        docs[jobs] = latexdoc.render("rnn,positional", tex_dir=root, figures_dir=root / "figures", jobs=jobs,
                                     appendix=False, handout=True, proof_seconds=None)
    assert handed == [["rnn"]]
    assert docs[1] == docs[2] and docs[2].count("\\includegraphics") == 1


def test_sections_that_share_their_derivations_are_one_task_when_both_are_asked_for():
    assert latexrun.built_together(["rnn", "residual", "attention", "encoder"]) == [[0], [1, 3], [2]]
    assert latexrun.built_together(["encoder", "residual"]) == [[0, 1]]  # in the order asked for
    assert latexrun.built_together(["encoder", "conv"]) == [[0], [1]]  # the residual section not asked for


@needs_fork
def test_latex_sections_built_together_give_the_serial_document(monkeypatch):
    """residual and encoder: one task (one worker, one run cache), and the document of a serial build."""
    run_tasks, counted = parallel.run_tasks, []

    def counting(tasks, *a, **kw):
        if any(getattr(t.run, "func", None) is latexrun._build_all for t in tasks):  # the sections' (not the checks')
            counted.append(len(tasks))
        return run_tasks(tasks, *a, **kw)

    monkeypatch.setattr(parallel, "run_tasks", counting)
    kw = dict(sections="residual,encoder", proof_seconds=None, appendix=False)
    assert latexdoc.render(jobs=2, **kw) == latexdoc.render(jobs=1, **kw)
    assert counted == [1]


@needs_fork
@pytest.mark.slow
def test_latex_parallel_document_with_check_tables_is_the_serial_one():
    kw = dict(sections="gates,encoder", proof_seconds=None)  # check tables: errors must not depend on --jobs
    assert latexdoc.render(jobs=2, **kw) == latexdoc.render(jobs=1, **kw)


# ----------------------------------------------------------------------------- the head start

def _my_pid(*_):
    return os.getpid()


@needs_fork
@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_a_head_start_runs_its_tasks_then_hands_over(jobs):
    head_tasks = _tasks(*[(_my_pid, w) for w in (1, 5, 2)])
    with parallel.HeadStart(head_tasks) as head:
        first = head.process.pid  # forked at once, on the heaviest of its tasks
        got = dict(parallel.run_tasks(_tasks(*[((lambda i=i: i), 1) for i in range(4)]), jobs, head=head))
    assert {i: got[i] for i in range(4)} == {i: i for i in range(4)}
    assert sorted(got) == list(range(7))
    assert got[4 + 1] == (first if jobs > 1 else os.getpid())  # jobs 1: the head start is ended, all run here
    assert not head.process  # taken over (and ended) by the pool, or closed


@needs_fork
def test_the_head_start_takes_only_its_own_tasks_and_others_take_those_it_has_not_reached():
    import time

    slow = lambda: (time.sleep(0.5), os.getpid())[1]  # noqa: E731
    with parallel.HeadStart(_tasks((slow, 9), (_my_pid, 1), (_my_pid, 1), (_my_pid, 1))) as head:
        first = head.process.pid
        got = dict(parallel.run_tasks(_tasks((_my_pid, 1)), 2, head=head))
    assert got[1] == first and got[0] != first  # its first task; the run's own task went to another worker
    assert all(got[k] != first for k in (2, 3, 4))  # a forked worker took the rest while it was busy


@needs_fork
def test_a_dying_head_start_costs_only_its_task():
    with parallel.HeadStart(_tasks((_die, 9), (lambda: "second", 1))) as head:
        got = dict(parallel.run_tasks(_tasks((lambda: "own", 1)), 2, head=head))
    assert got == {0: "own", 1: "lost: its worker process ended (exit code 3)", 2: "second"}


@needs_fork
def test_a_head_start_not_taken_over_is_ended():
    import time

    with pytest.raises(KeyboardInterrupt):
        with parallel.HeadStart(_tasks((lambda: time.sleep(30), 1))) as head:
            process = head.process
            raise KeyboardInterrupt  # e.g. Ctrl-C while the command still imports torch
    assert not process.is_alive() and not head.process


@needs_fork
def test_a_task_ahead_runs_in_a_worker_and_its_result_is_taken_later():
    ahead = parallel.Ahead(parallel.Task(_my_pid, lambda reason: f"lost: {reason}"))
    worker = ahead.process.pid
    assert worker != os.getpid() and ahead.result() == worker
    assert not ahead.process  # ended once its result is in


@needs_fork
def test_a_task_ahead_that_raises_or_dies_gives_its_lost_result():
    assert parallel.Ahead(_tasks((_boom, 1))[0]).result().startswith("lost: ArithmeticError: bad task")
    assert parallel.Ahead(_tasks((_die, 1))[0]).result() == "lost: its worker process ended (exit code 3)"


def test_a_task_ahead_runs_here_where_this_process_cannot_fork(monkeypatch):
    monkeypatch.setattr(parallel, "can_fork", lambda: False)
    ahead = parallel.Ahead(parallel.Task(_my_pid, lambda reason: reason))
    assert ahead.process is None and ahead.result() == os.getpid()


def test_the_proofs_ahead_are_every_audited_identity_and_the_sections_find_them(monkeypatch):
    """What latexrun proves ahead of torch's import: every identity the sections' appendices state
    (notes.AUDITED), handed back as run-cache entries that a process adopting them does not prove again."""
    from seqgrad.crosscheck import notes
    from seqgrad.crosscheck.latex_parts import catalogue_identities
    from seqgrad.derive.identity import Identity

    modules = notes.AUDITED["positional"] + notes.AUDITED["attention"]
    with runcache.scope():
        proved = latexrun._prove(modules, None)
    entries = catalogue_identities(modules)
    assert sorted(key[2] for key in proved) == sorted(e.name for e in entries) and len(entries) >= 10
    assert all(p.holds for p in proved.values())
    monkeypatch.setattr(Identity, "_prove_now", lambda self: pytest.fail(f"{self.name} proved again"))
    with runcache.scope():
        runcache.adopt(proved)
        assert all(e.prove() is proved[("once", "Identity.prove", e.name, e.title, e.method)] for e in entries)
    runcache.adopt(proved)  # outside a run: nothing kept
    with pytest.raises(pytest.fail.Exception, match="proved again"):
        entries[0].prove()


@needs_fork
def test_the_proofs_start_ahead_before_torch_is_imported():
    """seqgrad latex on several cores forks the proofs' worker while this process has SymPy but not torch."""
    code = ("import sys\nfrom seqgrad.crosscheck import latexdoc, parallel\n"
            "seen = []\nclass Seen(parallel.Ahead):\n"
            "    def __init__(self, task):\n        seen.append('torch' in sys.modules)\n        super().__init__(task)\n"
            "parallel.Ahead = Seen\n"
            "doc = latexdoc.render('positional,conv', jobs=2)\n"
            "assert seen == [False], seen\nassert 'not proved' not in doc\n")
    _python_passes(code, timeout=300)


def test_the_sympy_only_check_modules_import_neither_torch_nor_matplotlib():
    """registry.SYMPY_ONLY_MODULES start in a worker forked before torch is imported: their import and their
    checks must not need it (a check that did would import torch itself, and run 1.4 s slower, in that worker)."""
    code = ("import sys\nfrom seqgrad.crosscheck import registry\n"
            "mods = registry._import_paused(registry.SYMPY_ONLY_MODULES)\n"
            "items = [c for c in registry._REGISTRY.values() if c.run.__module__ in mods]\n"
            "assert len(items) >= 40, len(items)\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'matplotlib'))\n"
            "assert not bad, bad[:5]\n"
            "fast = [c for c in items if c.shard in ('softmax', 'counting', 'decoder', 'positional')]\n"
            "results = registry.run_group(fast)\n"
            "assert all(r.passed for r in results), [r.detail for r in results if not r.passed]\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'matplotlib'))\n"
            "assert not bad, bad[:5]\n")
    _python_passes(code, timeout=120)


def _python_passes(code: str, timeout: int) -> None:
    """Run ``code`` in a fresh interpreter (nothing imported yet) and assert that it exits 0."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-2000:]


@needs_fork
def test_checks_started_ahead_give_the_report_of_a_serial_run():
    from seqgrad.crosscheck.registry import ChecksAhead, run_with_tasks

    items = all_checks("encoder.*") + all_checks("identity:pe-*")
    strip = lambda rs: [{**r.as_dict(), "seconds": 0} for r in rs]  # noqa: E731
    with one_thread(), runcache.scope():
        serial = run_checks(items, jobs=1)
    with one_thread(), runcache.scope():
        with ChecksAhead(patterns=["identity:pe-*"]) as ahead:
            assert {c.name for c in ahead.items} == {c.name for c in items if c.group == "identities"}
            results, _ = run_with_tasks(items, [], jobs=2, ahead=ahead)
    assert strip(results) == strip(serial) and all(r.passed for r in serial)
    with ChecksAhead(patterns=["identity:pe-*"]) as ahead, pytest.raises(ValueError, match="ahead"):
        run_with_tasks(all_checks("encoder.*"), [], jobs=2, ahead=ahead)  # started checks the run does not have


@needs_fork
def test_a_signal_right_after_the_head_start_fork_ends_its_worker(monkeypatch):
    from seqgrad import signals

    seen = []
    real = parallel._fork

    def fork_then_interrupted(tasks, owner):
        real(tasks, owner)
        seen.append(owner.process)
        raise KeyboardInterrupt  # as signals.held() raises a signal that came during the fork, once it ends

    monkeypatch.setattr(parallel, "_fork", fork_then_interrupted)
    with pytest.raises(KeyboardInterrupt):
        parallel.HeadStart(_tasks((lambda: signals, 1)))
    assert seen and not seen[0].is_alive()
