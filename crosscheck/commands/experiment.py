"""``seqgrad experiment NAME``: run one of the course's experiments and write its results.

Today one experiment: ``cue-recall``, the week-06 practicum of seed 000 (Table 34):
RNN, GRU and a one-block causal Transformer remember a cue across 8, 16 or 32
random moves.  See :mod:`numeric.cue_recall` and ``docs/experiment-cue-recall.md``.
"""

from __future__ import annotations

from ._common import add_device, output_dir


def register(sub) -> None:
    p = sub.add_parser("experiment", help="run a course experiment (cue-recall: Table 34 of week 06) and write its results")
    inner = p.add_subparsers(dest="experiment", metavar="NAME", parser_class=type(p))
    inner.required = True
    q = inner.add_parser("cue-recall", help="RNN, GRU and Transformer remember a cue across d random moves (Table 34)")
    q.add_argument("--delays", default="8,16,32", metavar="LIST", help="comma-separated delays d >= 1 (default 8,16,32)")
    q.add_argument("--seeds", default=None, metavar="LIST",
                   help="comma-separated initialisation seeds or ranges a-b (default 6206-6208,7000-7009: the text's "
                        "three and ten more; with --quick 6206)")
    q.add_argument("--models", default="rnn,gru,transformer", metavar="LIST",
                   help="comma-separated models among rnn, gru, transformer (default all three)")
    q.add_argument("--out", default="seqgrad-experiments/cue-recall", metavar="DIR",
                   help="output directory; finished runs found there are reused (default seqgrad-experiments/cue-recall)")
    q.add_argument("--quick", action="store_true",
                   help="a smoke run: one seed, 4 epochs, 512/128/256 episodes (seconds, not minutes)")
    q.add_argument("--batch-size", type=int, default=None, metavar="N",
                   help="episodes per update (default 128; the text gives none; a run with another size is not the recorded setup)")
    q.add_argument("--loss", default=None, choices=("all-tokens", "recall"),
                   help="what the models are trained on (the text does not say): the mean next-token cross-entropy over every "
                        "position (default, the recorded setup) or the cross-entropy at the recall query alone")
    q.add_argument("--record", action="store_true",
                   help="also write results.json as the package's recorded run, which `seqgrad check` reads "
                        "(maintainers, in a source checkout; the text's setup only)")
    q.add_argument("--jobs", default="1", metavar="N", help="worker processes, one thread each (default 1, at most 64)")
    add_device(q)
    q.set_defaults(handler=run)


def command_line(args, models, delays, seeds) -> str:
    """The full command that reproduces this run, every option spelled out."""
    from seqgrad.numeric.cue_recall.experiment import format_seeds

    line = (f"seqgrad experiment cue-recall --delays {','.join(map(str, delays))} --seeds {format_seeds(seeds)} "
            f"--models {','.join(models)} --device {args.device} --out {args.out} --jobs {args.jobs}")
    line += f" --batch-size {args.batch_size}" if args.batch_size is not None else ""
    line += f" --loss {args.loss}" if args.loss is not None else ""
    return line + (" --quick" if args.quick else "") + (" --record" if args.record else "")


def run(args) -> int:
    from seqgrad.numeric.cue_recall import experiment
    from seqgrad.numeric.device import resolve_device
    from seqgrad import validate

    models = experiment.parse_models(args.models)
    delays = experiment.parse_delays(args.delays)
    seeds = experiment.parse_seeds(args.seeds) if args.seeds is not None else (
        experiment.QUICK_SEEDS if args.quick else experiment.DISTRIBUTION_SEEDS)
    args.jobs = experiment.parse_jobs(args.jobs)
    if args.batch_size is not None:
        validate.integer("--batch-size", args.batch_size, minimum=1)
    experiment.configuration(quick=args.quick, batch_size=args.batch_size, loss=args.loss, record=args.record)
    resolve_device(args.device)
    output_dir("--out", args.out)
    written = experiment.run(args.out, models_=models, delays=delays, seeds=seeds, quick=args.quick, batch_size=args.batch_size,
                             loss=args.loss,
                             device=args.device, jobs=args.jobs, command=command_line(args, models, delays, seeds),
                             record=args.record)
    print(summary(written[0]))
    for path in written:
        print(path)
    return 0


def summary(results_json) -> str:
    """The terminal's view of a finished grid: the table beside Table 34 (the text's seeds), the
    distribution over every seed, and the verdicts on the text's trends."""
    import json
    from pathlib import Path

    from seqgrad.numeric.cue_recall import experiment, results

    runs = json.loads(Path(results_json).read_text(encoding="utf-8"))["runs"]
    return "\n".join([results.markdown(results.table(experiment.text_seed_records(runs))),
                      results.distribution_markdown(results.distribution(runs)),
                      results.trends_markdown(results.trends(runs))])
