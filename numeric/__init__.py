"""Numeric references (numpy and torch): the Transformer encoder of the course
example, recurrent references, sweeps and figures.  Never imports ``derive``."""
