"""The arithmetic the documents print, recomputed from the figures it is derived from.

Each entry: the value, computed from its inputs (figures the documents print, or their examples'
settings), the formula, and where the statement is. The printed result itself lives in the claims
registry, so that the record holds only what was computed. Two derived figures cannot be recomputed
from the documents, because one of their inputs is not printed: SupCon's "0.8 points above the best
number previously reported" and MoCo's "a memory bank was 2.6 points worse".
"""
import math


def _entry(formula, inputs, compute, source):
    value = compute(**inputs)
    rounded = [round(v, 10) for v in value] if isinstance(value, list) else round(value, 10)
    return {"value": rounded, "formula": formula, "inputs": inputs, "source": source}


def run():
    blog = {"N": 128, "C": 4}          # the blog's NumPy experiment: 128 pairs, four latent classes
    return {
        "simclr_negatives_at_8192": _entry(
            "2 (N - 1)", {"N": 8192}, lambda N: 2 * (N - 1),
            "[E] How to Apply It > SimCLR, loss and batch (16,382 at 8,192)"),
        "gap_to_supervised": _entry(
            "[supervised - Wu et al., supervised - SimCLR], ImageNet linear top-1 in points",
            {"supervised": 76.3, "wu_et_al": 54.0, "simclr": 69.3},
            lambda supervised, wu_et_al, simclr: [supervised - wu_et_al, supervised - simclr],
            "[E] Evidence and Impact (the gap shrank from about 22 points to 7)"),
        "tiny_simclr_bn_views": _entry(
            "2 x batch", {"batch": 128}, lambda batch: 2 * batch,
            "[E] Example: a tiny SimCLR, text after the output (256 views)"),
        "tiny_simclr_crop_area": _entry(
            "[s_min^2, 1]: the crop side s ~ U(s_min, 1) of the script", {"s_min": 0.55},
            lambda s_min: [s_min**2, 1.0],
            "[E] Example: a tiny SimCLR, introduction (30-100% of the area)"),
        "blog_logit_bound_small_tau": _entry(
            "1 / tau", {"tau": 0.05}, lambda tau: 1 / tau,
            "[B] The temperature (logits in [-20, 20] at tau = 0.05)"),
        "blog_negatives": _entry(
            "2N - 2", {"N": blog["N"]}, lambda N: 2 * N - 2,
            "[B] A NumPy experiment, the loss floor (254 negatives)"),
        "blog_same_class_views": _entry(
            "2 (N - 1) / C: each other pair shares the anchor's class with probability 1/C", blog,
            lambda N, C: 2 * (N - 1) / C,
            "[B] A NumPy experiment, the loss floor (about 63 same-class views)"),
        "blog_tied_candidates": _entry(
            "1 + 2 (N - 1) / C: the partner and its same-class ties", blog, lambda N, C: 1 + 2 * (N - 1) / C,
            "[B] A NumPy experiment, the loss floor (about 1/64 of the mass)"),
        "blog_log_64": _entry(
            "log n", {"n": 64}, lambda n: math.log(n), "[B] A NumPy experiment, the loss floor (log 64 = 4.16)"),
        "blog_floor_excess": _entry(
            "printed floor - log 64", {"printed_floor": 4.17}, lambda printed_floor: printed_floor - math.log(64),
            "[B] A NumPy experiment, the loss floor (4.17 within a hundredth of log 64)"),
        "blog_mi_cap": _entry(
            "log(2N - 1)", {"N": blog["N"]}, lambda N: math.log(2 * N - 1),
            "[B] The loss, first consequence (log 255 = 5.5 nats at 128 pairs)"),
        "rotation_chance": _entry(
            "1 / rotations", {"rotations": 4}, lambda rotations: 1 / rotations,
            "[E] How to Apply It > SimCLR, Table 3 (chance 25%)"),
    }
