"""The robustness panel: every paired claim re-judged under each registered alternative choice.

Rule: the primary analysis (registered probe, rung, compute basis; no multiplicity correction) is
re-run with one choice changed at a time (rules.robustness):
    probe         the other probes on the same embedding (linear <-> kNN, weighted kNN)
    rung          a ladder claim at the rung that starts the last doubling before its primary rung
                  (the top rung is primary, so no trained rung lies above it)
    basis         equal images seen, where the arms see different images per step and the rungs
                  allow a pairing (arm a at rung r_a, b at r_b with r_a x batch_a = r_b x batch_b)
    multiplicity  Benjamini-Hochberg: a decided verdict stands only with its q-value below alpha
A claim is `robust` when every alternative gives the primary verdict, else `depends on: <the
choices that change it>`.
"""

DIMENSIONS = ("probe", "rung", "basis", "multiplicity")


def label(primary_verdict, alternatives):
    """'robust' or 'depends on: probe, rung, ...' (in DIMENSIONS order)."""
    moved = {a["dimension"] for a in alternatives if a["verdict"] != primary_verdict}
    return "robust" if not moved else "depends on: " + ", ".join(d for d in DIMENSIONS if d in moved)


def multiplicity_verdict(verdict, q, alpha):
    """The verdict if it had to survive Benjamini-Hochberg at alpha."""
    if verdict in ("reproduced", "contradicted", "no meaningful effect") and (q is None or q >= alpha):
        return "inconclusive"
    return verdict


def equal_images_steps(rungs_a, rungs_b, images_a, images_b):
    """(step_a, step_b): the highest pair of rungs at which both arms have seen as many images, or
    None when the arms see as many per step (equal steps is already equal images) or no pair exists."""
    if images_a == images_b:
        return None
    pairs = [(ra, rb) for ra in rungs_a for rb in rungs_b if ra > 0 and rb > 0 and ra * images_a == rb * images_b]
    return max(pairs) if pairs else None
