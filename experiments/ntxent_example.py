"""Stage ntxent_example: the NumPy NT-Xent example's printed numbers, recomputed."""
from replication.run.config import NtXentExample, read_resolved
from replication.examples import ntxent_numpy
from replication.io import write_json

if __name__ == "__main__":
    p = read_resolved("examples/ntxent_numpy", NtXentExample)
    write_json("results/examples/ntxent_numpy.json", ntxent_numpy.run(p.loss_tau, p.taus, p.fd_step))
