"""Stage analytic: the documents' analytic statements about InfoNCE, checked numerically, and the
arithmetic they print, recomputed."""
from replication.examples import analytic, arithmetic
from replication.io import write_json

if __name__ == "__main__":
    write_json("results/examples/analytic.json", {**analytic.run(), "arithmetic": arithmetic.run()})
