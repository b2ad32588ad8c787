"""The robustness panel: every paired claim re-judged under each registered alternative choice.

Rule: the primary analysis (registered probe, rung, compute basis; no multiplicity correction) is
re-run with one choice changed at a time (rules.robustness):
    probe         the other probes on the same embedding (linear, kNN on centred features, weighted
                  kNN; the linear probe on every training label where the claim reads the budget)
    rung          a ladder claim at the rung that starts the last doubling before its primary rung
                  (the top rung is primary, so no trained rung lies above it)
    basis         each other registered basis (equal steps = equal updates, equal images seen, equal
                  encoder passes) where the arms spend differently per step and the rungs allow a
                  pairing (a at rung r_a, b at r_b with r_a x cost_a = r_b x cost_b)
    baseline      where the two sides already differ before training (step 0) beyond the margin, the
                  contrast of their gains over step 0
    multiplicity  Benjamini-Hochberg: a decided verdict stands only with its q-value below alpha
A claim is `robust` when every alternative gives the primary verdict, else `depends on: <the
choices that change it>`.
"""

DIMENSIONS = ("probe", "rung", "basis", "baseline", "multiplicity")
PROBES = ("linear", "knn", "knn_centred", "wknn", "linear_full")
BUDGET_ONLY = ("linear_full",)          # evaluated at a run's budget checkpoint only (not at ladder rungs)


def label(primary_verdict, alternatives):
    """'robust' or 'depends on: probe, rung, ...' (in DIMENSIONS order)."""
    moved = {a["dimension"] for a in alternatives if a["verdict"] != primary_verdict}
    return "robust" if not moved else "depends on: " + ", ".join(d for d in DIMENSIONS if d in moved)


def cost_per_step(config, basis):
    """What one training step of a run (its training record's config) spends on a compute basis:
    one update; `batch` images; or its encoder passes, views x batch (a forward pass counts whether
    or not it is back-propagated: the memory bank encodes one view per image, every other method two,
    MoCo's second through its key encoder)."""
    if basis in ("equal steps", "equal updates"):
        return 1
    if basis == "equal images":
        return config["batch"]
    return config["batch"] * (1 if config["method"] == "memory_bank" else 2)


def matched_steps(rungs_a, rungs_b, cost_a, cost_b):
    """Every pair of trained rungs (step_a, step_b), ascending, at which the two arms have spent the
    same on a basis: step_a x cost_a = step_b x cost_b."""
    return sorted((ra, rb) for ra in rungs_a for rb in rungs_b if ra > 0 and rb > 0 and ra * cost_a == rb * cost_b)
