"""The probes of an evaluation record (run/evaluate.py): the one list of their names, each with its
title for the reader, from which every other list of probes is drawn (the gates', the robustness
panel's, the registry's record keys, the range check's accuracies, the report's column titles).

A probe reads one embedding (h or z) and gives an accuracy on the test set, a fraction in [0, 1];
its title is filled from the record's own protocol (probe_title)."""

PROBES = {   # key under `h` or `z` in a record: its title, with fields of the record's protocol
    "linear": "linear, {labels_per_class} labels per class",
    "linear_full": "linear, every label",
    "knn": "{knn_k}-NN",
    "knn_centred": "{knn_k}-NN, centred features",
    "wknn": "weighted {wknn[k]}-NN",
    "rotation": "rotation, linear",
    "rotation_mlp": "rotation, MLP",
    "colour": "grayscale or not, linear",
}
PANEL = ("linear", "knn", "knn_centred", "wknn", "linear_full")       # the class-label probes: robustness.py
NAMES = {"linear": "the few-label linear probe", "linear_full": "the all-label linear probe", "knn": "kNN",
         "knn_centred": "centred kNN", "wknn": "weighted kNN"}    # a class-label probe in a label's words
STAND_IN = {"linear_full": "linear"}
# the probe read where a claim's probe was not evaluated at the rungs it reads: run 2's records hold the
# all-label probe at each run's budget only (judge/ladder.py)
EMBEDDING_FIGURES = ("alignment", "uniformity", "tolerance", "tolerance_centred")   # an embedding's other figures
CONTRASTIVE_TOP1 = "contrastive_top1"     # the pretext task's top-1 accuracy: the method's, not an embedding's
ACCURACIES = (*PROBES, CONTRASTIVE_TOP1)  # every accuracy a record holds, within [0, 1]
ON_LOGIT_SCALE = ("linear", "knn", "wknn", "rotation", "rotation_mlp", CONTRASTIVE_TOP1)
# the accuracies whose contrasts also get an effect on the logit scale, as registered (kinds.py); one
# added here adds that effect to claims.json


def probe_title(probe, protocol):
    """A probe's title in the words of an evaluation record's protocol ('linear, 20 labels per class')."""
    return PROBES[probe].format(**protocol)
