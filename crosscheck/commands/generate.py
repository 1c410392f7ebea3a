"""``seqgrad generate``: the lesson's generation example (seed 001 l.184), step by step.

A toy encoder-decoder is trained by teacher forcing on "I love ML" -> «Я люблю МО»; greedy generation
then prints, at every step, the target positions the causal mask lets the decoder see and its
prediction.  The encoder runs once; every step reuses its output.
"""

from __future__ import annotations

MAX_STEPS = 5000
#: size guards (docs/limits.md): the source sentence (the attention maps grow as its length squared; 100,000
#: characters once asked for 40 GB) and the generated length (each step reruns the decoder on the prefix)
MAX_WORDS = 256
MAX_CHARS = 64 * MAX_WORDS
MAX_LEN = 1000


def register(sub) -> None:
    p = sub.add_parser("generate", help="the lesson's generation example I love ML -> Я люблю МО, step by step")
    p.add_argument("--text", default="I love ML", metavar="TEXT", help=f"source sentence over the words i, love, ml, at most {MAX_WORDS} words (default 'I love ML')")
    p.add_argument("--max-len", type=int, default=10, metavar="N", help=f"length limit of the generated sequence, 1 <= N <= {MAX_LEN} (default 10)")
    p.add_argument("--train-steps", type=int, default=60, metavar="S",
                   help=f"teacher-forcing updates on the sentence pair, 1 <= S <= {MAX_STEPS} (default 60)")
    p.add_argument("--seed", type=int, default=0, metavar="SEED", help="seed of the toy model's initial weights, 0 <= SEED < 2**63 (default 0)")
    p.add_argument("--attention", action="store_true", help="also print each step's cross-attention weights over the source words")
    p.set_defaults(handler=run)


def run(args) -> int:
    from seqgrad.numeric.decoder import SOURCE_WORDS, describe, lesson_example
    from seqgrad.numeric.tokens import Vocabulary
    from seqgrad import validate
    from seqgrad.errors import SeqgradValueError

    validate.integer("--max-len", args.max_len, minimum=1, maximum=MAX_LEN)
    steps = validate.integer("--train-steps", args.train_steps, minimum=1, maximum=MAX_STEPS)
    validate.seed("--seed", args.seed)
    words = len(args.text.split()) if len(args.text) <= MAX_CHARS else None  # a huge text is not split
    if words is None or words > MAX_WORDS:
        shown = f"{len(args.text)} characters" if words is None else f"{words} words"
        raise SeqgradValueError("--text", shown, f"at most {MAX_WORDS} words ({MAX_CHARS} characters)")
    Vocabulary(SOURCE_WORDS).encode(args.text)  # refuse an unknown word before training
    model, sv, tv, losses = lesson_example(steps=steps, seed=args.seed)
    gen = model.generate(sv.encode(args.text), args.max_len, attention=args.attention)
    print(f"teacher forcing on 'I love ML' -> 'Я люблю МО': loss {losses[0]:.3f} -> {losses[-1]:.3g} after {steps} updates")
    print(f"source: {' '.join(sv.decode(sv.encode(args.text)))} (the encoder runs once)")
    lines = describe(gen, tv)
    for s, line in zip(gen.steps, lines):
        print(line)
        if args.attention:
            for h, row in enumerate(s.cross_attention.tolist(), 1):
                print(f"    cross-attention head {h}: " + ", ".join(f"{w} {a:.3f}" for w, a in zip(sv.decode(sv.encode(args.text)), row)))
    print(lines[-1])
    return 0
