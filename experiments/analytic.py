"""Stage analytic: the documents' analytic statements about InfoNCE, checked numerically."""
from replication.examples import analytic
from replication.io import write_json

if __name__ == "__main__":
    write_json("results/examples/analytic.json", analytic.run())
