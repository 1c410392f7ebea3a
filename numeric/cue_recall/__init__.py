"""The cue-recall experiment of week 06 (Table 34 of seed 000, lines 1281-1300).

RNN, GRU and a one-block causal Transformer must remember a cue across ``d``
random moves.  One idea per module:

* :mod:`.task`: the robot command language, the episodes and the recall metric;
* :mod:`.models`: the three models, from the project's numeric modules and ``torch.nn``;
* :mod:`.train`: one training run (60 epochs, Adam 0.003, clipping at norm 1,
  checkpoint by validation cue-recall cross-entropy);
* :mod:`.paths`: the gradient paths from the recall loss back to the cue on trained models;
* :mod:`.results`: the result table (Markdown, JSON, booktabs LaTeX) beside the printed Table 34;
* :mod:`.figures`: accuracy against delay, and the gradient-path figure;
* :mod:`.experiment`: the whole grid of runs, resumable, with atomic outputs.
"""

from pathlib import Path

#: The recorded full run, shipped as package data (pyproject's package-data): the one results.json that
#: ``seqgrad check`` reads, written by ``seqgrad experiment cue-recall --record`` beside --out's copy.
#: Defined here, not in :mod:`.experiment`, so that reading it imports no torch.
RECORD = Path(__file__).resolve().parent / "data" / "results.json"
