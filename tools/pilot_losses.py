"""Pilot: does each loss arm train? NT-Xent (the default SimCLR arm), NT-Logistic and the sigmoid
(SigLIP) loss, each trained for a few hundred steps at batch 128, one seed, on the default dataset,
through the project's own entry points (replication.run.train.train_run on the resolved conditions),
then the linear probe on h and z (the study's 20-label budget, BatchNorm calibrated as evaluate@
does) of the untrained control and of the trained encoder.

    python -m tools.pilot_losses [--steps 300]

Writes reports/pilot/losses.json (loss curves, probes, learned scalars) and reports/pilot/losses.md.
Not a study: one seed, and it trains no condition of params.yaml as registered (the SigLIP arm runs
at batch 128 here). The arm `siglip_bias_log_n` repeats the SigLIP arm with the bias initialisation
the committed run used (b = -log(N - 1)), to show what the fix to b = -10 changes.
"""
import argparse
import json
import math
import time
from pathlib import Path

import torch

from contrastive import losses, methods
from replication.io import cpu_model, write_json
from replication.run.calibration import recalibrate_bn
from replication.run.config import EvaluateConfig, StudyConfig, read_resolved
from replication.run.datasets import dataset_for
from replication.run.evaluate import method_from_state
from replication.run.train import train_run
from contrastive.evaluate import linear_probes

# arm -> (study, condition, overrides): the resolved condition, at the pilot's steps and batch
ARMS = {
    "nt_xent": ("simclr_mocov2", "simclr", {}),
    "nt_logistic": ("simclr", "simclr_logistic", {}),
    "nt_logistic_all_negatives": ("simclr", "simclr_logistic", {"negatives": "all"}),
    "siglip": ("batch", "siglip_b32_s400", {}),
    "siglip_bias_log_n": ("batch", "siglip_b32_s400", {}),
}


class _BiasLogN(losses.SigLIPLoss):
    """The committed run's SigLIP initialisation: b = -log(N - 1) at the pilot's batch."""
    batch = 128

    def __init__(self):
        super().__init__(b=-math.log(self.batch - 1))


def probes(cfg, record, state, data, ev):
    method = method_from_state(cfg, state, record["n_data"], record["n_classes"])
    recalibrate_bn([method.f, method.g], data["x_train"], ev.control.bn_batches, ev.control.bn_batch_size)
    return linear_probes(method.f, method.g, data, ev.evaluate)


def run_arm(arm, steps, batch, data, ev):
    study_name, condition, overrides = ARMS[arm]
    study = read_resolved(f"pretrain/{study_name}", StudyConfig)
    cfg = study.conditions[condition].model_copy(update={**overrides, "steps": steps, "batch": batch, "ladder": [], "checkpoints": []})
    original = losses.SigLIPLoss
    if arm == "siglip_bias_log_n":
        _BiasLogN.batch = batch
        methods.losses.SigLIPLoss = _BiasLogN
    try:
        start = time.perf_counter()
        record, states = train_run(0, condition, cfg, study.execution, study.data)
        seconds = time.perf_counter() - start
    finally:
        methods.losses.SigLIPLoss = original
    before, after = probes(cfg, record, states[0], data, ev), probes(cfg, record, states[steps], data, ev)
    return {"study": study_name, "condition": condition, "loss": cfg.loss, "tau": cfg.tau,
            "negatives": cfg.negatives if cfg.loss == "logistic" else None, "steps": steps, "batch": batch,
            "status": record["status"], "loss_curve": record["loss_curve"],
            "loss_start": record["loss_curve"][0][1], "loss_end": record["loss_curve"][-1][1],
            "learned_scalars": record["learned_scalars"],
            "probe_before": before, "probe_after": after, "train_s": round(seconds, 1)}


def markdown(out):
    lines = ["# Pilot: does each loss arm train?", "",
             f"{out['steps']} steps at batch {out['batch']}, seed 0, glyphs100, one torch thread ({out['cpu']}). "
             "Linear probe on the 20-label budget (BatchNorm calibrated), test accuracy; chance 1%.", "",
             "| arm | loss start | loss end | h before | h after | z before | z after | learned |",
             "|---|---|---|---|---|---|---|---|"]
    for arm, r in out["arms"].items():
        learned = ", ".join(f"{k.split('.')[-1]} {v:.2f}" for k, v in r["learned_scalars"].items()) or "-"
        lines.append(f"| {arm} | {r['loss_start']:.3f} | {r['loss_end']:.3f} | {r['probe_before']['h']['linear']:.3f} "
                     f"| {r['probe_after']['h']['linear']:.3f} | {r['probe_before']['z']['linear']:.3f} "
                     f"| {r['probe_after']['z']['linear']:.3f} | {learned} |")
    lines += ["", "Loss curves are in losses.json (`loss_curve`: [step, loss]).", ""]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--arms", nargs="*", default=list(ARMS))
    parser.add_argument("--out", default="reports/pilot")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    ev = read_resolved("evaluate", EvaluateConfig)
    data = dataset_for("glyphs100", read_resolved("pretrain/simclr_mocov2", StudyConfig).data)
    out = {"steps": args.steps, "batch": args.batch, "seed": 0, "dataset": "glyphs100", "cpu": cpu_model(),
           "threads": 1, "arms": {}}
    for arm in args.arms:
        out["arms"][arm] = run_arm(arm, args.steps, args.batch, data, ev)
        print(arm, json.dumps({k: out["arms"][arm][k] for k in ("loss_start", "loss_end", "probe_before", "probe_after")}),
              flush=True)
    folder = Path(args.out)
    write_json(folder / "losses.json", out)
    (folder / "losses.md").write_text(markdown(out))


if __name__ == "__main__":
    main()
