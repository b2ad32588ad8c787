"""Stage analytic: the documents' analytic statements about InfoNCE, checked numerically."""
from contrastive.config import load_params
from contrastive.examples import analytic
from contrastive.io import write_json

if __name__ == "__main__":
    load_params()
    write_json("results/examples/analytic.json", analytic.run())
