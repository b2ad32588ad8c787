"""Stage ntxent_example: the NumPy NT-Xent example's printed numbers, recomputed."""
import _interpreter  # noqa: F401  (experiments/_interpreter.py: the project's interpreter, or one line)
from replication.run.config import NtXentExample, read_resolved
from replication.examples import ntxent_numpy
from replication.io import stage_outputs, write_json

OUT = "results/examples/ntxent_numpy.json"

if __name__ == "__main__":
    p = read_resolved("examples/ntxent_numpy", NtXentExample)
    with stage_outputs(OUT):
        write_json(OUT, ntxent_numpy.run(p.loss_tau, p.taus, p.fd_step))
