"""Stage ntxent_example: the NumPy NT-Xent example's printed numbers, recomputed."""
from contrastive.config import load_params
from contrastive.examples import ntxent_numpy
from contrastive.io import write_json

if __name__ == "__main__":
    p = load_params().examples.ntxent_numpy
    write_json("results/examples/ntxent_numpy.json", ntxent_numpy.run(p.loss_tau, p.taus, p.fd_step))
