"""Stage analytic: the documents' analytic statements about InfoNCE, checked numerically, and the
arithmetic they print, recomputed."""
import _interpreter  # noqa: F401  (experiments/_interpreter.py: the project's interpreter, or one line)
from replication.examples import analytic, arithmetic
from replication.io import stage_outputs, write_json

OUT = "results/examples/analytic.json"

if __name__ == "__main__":
    with stage_outputs(OUT):
        write_json(OUT, {**analytic.run(), "arithmetic": arithmetic.run()})
