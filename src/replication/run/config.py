"""The params.yaml schema (types and ranges only: every default value lives in params.yaml) and its
resolution into one file per stage.

`read_params()` reads params.yaml, applies the active profile's overrides and validates the whole
file. `resolve(params)` turns it into the configuration each stage uses (resolved/<stage>.json,
written by the `resolve` stage): a stage depends on its own resolved file, so editing a profile
that is not active changes nothing, and editing the active one reruns exactly the stages whose
configuration it changes. A bad file ends the process with exit status 2 and one line that names
the key and what is allowed; nothing is written. Checking is strict, so that no value slips through
by coercion: no text for a number or a flag, finite numbers only, unique seeds, no key given twice,
and names of studies, conditions and profiles that are safe as paths and DVC stage names.

    python -m replication.run.config [params.yaml]     # validate only
"""
import copy
import json
import math
import os
import re
import sys
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import AfterValidator, BaseModel, Field, ValidationError, field_validator, model_validator

from ..io import DuplicateKeyError, ExpansionError, digest, load_yaml
from ..schema import Strict, excerpt, one_line


def _unique(values):
    """Repeated seeds would count one run twice and narrow every interval built on them."""
    repeated = sorted({v for v in values if values.count(v) > 1})
    if repeated:
        raise ValueError(f"seeds must be unique; repeated: {', '.join(map(str, repeated))}")
    return values


# Upper bounds: far above every profile of params.yaml (cifar10's 48,900 steps of 512 images, its
# 50,000 labelled images; thorough's 14,400-step ladder), so that only a slip (1e12 steps, a batch
# of 10^9) is refused, at once and in one line, rather than training for years or failing to
# allocate minutes later.
MAX_STEPS = 1_000_000           # training and probe steps
MAX_BATCH = 16_384              # images (or points) per batch
MAX_IMAGES = 1_000_000          # images generated or used per split
MAX_LIST = 1_000                # seeds, rungs, temperatures, ... in one list
MAX_RATE = 10                   # a learning rate: Adam's steps at 10 already throw every weight far off
MAX_SPREAD = 100                # toy2d's noises: 100 sd of its N(0, I) class centres, all classes one blur
MAX_INT = 2**63 - 1             # every integer: NumPy's and torch's int64
# Floats: a temperature divides a cosine, so 1 / MIN_TAU = 500 is the largest logit, whose exp stays
# finite in float64 (the documents' NumPy example; it overflows past 709); every profile's least is
# 0.01 (the collapse floor), its largest 100 (the rows without l2 normalisation).
MIN_TAU, MAX_TAU = 0.002, 1_000
MAX_WEIGHT = 100                # a loss term's or penalty's weight (lam, probe_l2), a critic's scale
MAX_MARGIN = 100                # a margin, in squared distance (unit vectors are at most 4 apart)
MAX_NATS = 100                  # a tolerance in nats (the InfoNCE bound's log K is at most 14 here)
MAX_KAPPA = 10_000              # a von Mises-Fisher concentration: a spread of 0.01 rad at most


def _at_most(bound, why):
    """A bound stated with where it comes from, so that the one line says both."""
    def check(value):
        if value > bound:
            raise ValueError(f"must be at most {bound:,} ({why})")
        return value
    return AfterValidator(check)


Temperature = Annotated[float, Field(ge=MIN_TAU, le=MAX_TAU)]
Temperatures = Annotated[list[Temperature], Field(min_length=1, max_length=MAX_LIST)]
Weight = Annotated[float, Field(gt=0), _at_most(MAX_WEIGHT, "MAX_WEIGHT in run/config.py: the other terms vanish beside it")]
Nats = Annotated[float, Field(gt=0), _at_most(MAX_NATS, "MAX_NATS in run/config.py: far above log K of any batch")]
Kappa = Annotated[float, Field(gt=0), _at_most(MAX_KAPPA, "MAX_KAPPA in run/config.py: every point on its mean")]
Rate = Annotated[float, Field(gt=0), _at_most(MAX_RATE, "MAX_RATE in run/config.py: far above any rate that trains")]
Spread = Annotated[float, Field(ge=0), _at_most(MAX_SPREAD, "MAX_SPREAD in run/config.py: 100 sd of the class centres")]
Seed = Annotated[int, Field(ge=0, le=2**32 - 1)]   # numpy's seeds stop at 2^32 - 1
Seeds = Annotated[list[Seed], Field(min_length=1, max_length=MAX_LIST), AfterValidator(_unique)]
Threads = Annotated[int, Field(ge=1, le=64)]
Count = Annotated[int, Field(ge=1)]
Steps = Annotated[int, Field(ge=1, le=MAX_STEPS)]
Batch = Annotated[int, Field(ge=2, le=MAX_BATCH)]
Images = Annotated[int, Field(ge=10, le=MAX_IMAGES)]
RESOLVED = Path("resolved")
NAME = re.compile(r"[a-z0-9_]+")     # study, condition and profile names: used in paths and stage names
NAME_RULE = "may hold only lower-case letters, digits and _ (it becomes a path, a DVC stage name and a command's argument)"
MAX_BYTES = 1_000_000                # a YAML file DVC or a tool reads: params.yaml is 25 kB, analysis/claims.yaml 150 kB


def _name(value):
    if not NAME.fullmatch(value):
        raise ValueError(NAME_RULE)
    return value


Name = Annotated[str, AfterValidator(_name)]      # a name in a file other than params.yaml (run/stage_two.py)


# ---------------------------------------------------------------- data

class ShapesData(Strict):
    seed: Seed
    n_train: Images
    n_test: Images
    clutter: Annotated[int, Field(ge=0, le=20)]       # distractor blobs per image
    texture: Annotated[float, Field(ge=0, le=1)]      # amplitude of the background stripes
    noise: Annotated[float, Field(ge=0, le=1)]        # per-pixel Gaussian noise


class Shapes4Data(Strict):
    seed: Seed
    n_train: Images
    n_test: Images


class GlyphsData(Strict):
    """glyphs100 (src/contrastive/glyphs.py): 100 stroke glyphs in 10 families; its difficulty knobs."""
    seed: Seed
    n_train: Images
    n_test: Images
    jitter: Annotated[float, Field(ge=0, le=0.5)]       # sd of each stroke's own shift (glyph units)
    warp: Annotated[float, Field(ge=0, le=0.5)]         # amplitude of the smooth warp (glyph units)
    rotation: Annotated[float, Field(ge=0, le=45)]      # max rotation, degrees
    stroke: Annotated[float, Field(gt=0, le=0.3)]       # least stroke half-width (glyph units)
    part_drop: Annotated[float, Field(ge=0, le=1)]      # probability that one base stroke is left out
    clutter: Annotated[int, Field(ge=0, le=20)]         # distractor strokes per image
    clutter_mimic: Annotated[float, Field(ge=0, le=1)]  # share of distractors in the glyph's own colour
    texture: Annotated[float, Field(ge=0, le=1)]        # amplitude of the background stripes
    min_contrast: Annotated[float, Field(ge=0, le=1)]   # least brightness gap, glyph to background
    noise: Annotated[float, Field(ge=0, le=1)]          # per-pixel Gaussian noise


class DigitsData(Strict):
    seed: Seed
    n_test: Annotated[int, Field(ge=10, le=1000)]


class FolderData(Strict):
    root: str | None                                  # where the images are; read at run time, never downloaded
    seed: Seed
    n_test: Annotated[float, Field(gt=0, lt=1)]       # imagefolder: held-out fraction


class SameClassShare(Strict):
    """The manifests' share of in-batch negatives that share the anchor's class
    (replication.run.datasets.same_class_negatives)."""
    batch: Batch
    batches: Annotated[int, Field(ge=2, le=100_000)]  # two at least: the measured share's standard error
    seed: Seed


class DataParams(Strict):
    image_size: Annotated[int, Field(ge=8, le=256)]
    same_class: SameClassShare
    shapes: ShapesData
    shapes4: Shapes4Data
    glyphs100: GlyphsData
    digits: DigitsData
    imagefolder: FolderData
    cifar10: FolderData


# ---------------------------------------------------------------- examples

class NtXentExample(Strict):
    loss_tau: Temperature
    taus: Temperatures
    fd_step: Annotated[float, Field(gt=0, lt=1e-2)]


class ShapeTest(Strict):
    """Same shape with nuisances redrawn against another shape with the same nuisances (match_by_shape)."""
    images: Annotated[int, Field(ge=2, le=MAX_IMAGES)]
    seed: Seed


class TinySimCLR(Strict):
    seeds: Seeds
    steps: Steps
    batch: Batch
    tau: Temperature
    threads: Threads
    thread_check_seed: Seed
    thread_counts: Annotated[list[Threads], Field(min_length=1, max_length=MAX_LIST)]
    shape_test: ShapeTest


class Toy2D(Strict):
    seeds: Seeds
    taus: Temperatures
    steps: Steps
    batch: Batch
    lr: Rate
    n_eval: Annotated[int, Field(ge=20, le=MAX_IMAGES)]
    n_classes: Annotated[int, Field(ge=2, le=1000)]
    class_spread: Spread                              # sd of a sample's own offset from its class centre
    view_noise: Spread                                # sd of the noise an augmentation adds
    knn_k: Annotated[int, Field(ge=1, le=MAX_IMAGES)]
    sweep_view_noise: list[Spread]                    # view noises swept, the class spread re-fitted at each
    calibration_seeds: Seeds
    calibration_knn: Annotated[float, Field(gt=0, lt=1)]     # the untrained 10-NN accuracy the fit matches


class MiBound(Strict):
    """x uniform on `symbols` symbols; y = x, or with probability eps a fresh uniform symbol."""
    symbols: Annotated[int, Field(ge=2, le=MAX_IMAGES)]
    eps: Annotated[list[Annotated[float, Field(ge=0, le=1)]], Field(min_length=1)]
    batch_sizes: Annotated[list[Annotated[int, Field(ge=2, le=1_000_000)]], Field(min_length=1)]   # K candidates
    critic_scales: Annotated[list[Weight], Field(min_length=1, max_length=MAX_LIST)]                    # critic = scale x log p(y|x)/p(y); 1 is the optimal critic
    check_batch_sizes: Annotated[list[Annotated[int, Field(ge=2, le=4096)]], Field(min_length=1)]
    check_batches: Annotated[int, Field(ge=2, le=100_000)]
    tight_within: Nats                                # nats: a gap at most this is "tight"
    zero_loss_within: Nats                            # nats: a loss at most this has "reached zero"
    seed: Seed

    @model_validator(mode="after")
    def _optimal_critic_included(self):
        if 1.0 not in self.critic_scales:
            raise ValueError("critic_scales must include 1.0 (the optimal critic)")
        return self


class CollapseBatch(Strict):
    pairs: Annotated[int, Field(ge=2, le=MAX_BATCH)]
    classes: Annotated[int, Field(ge=2, le=1000)]


class CollapseFloor(Strict):
    batches: Annotated[list[CollapseBatch], Field(min_length=1)]
    taus: Temperatures
    seed: Seed


class Decomposition(Strict):
    """Fixed embeddings on S^2: a von Mises-Fisher mixture, each point with a positive drawn around it."""
    points: Annotated[int, Field(ge=10, le=20_000)]
    classes: Annotated[int, Field(ge=1, le=1000)]
    class_kappa: Kappa
    view_kappa: Kappa
    taus: Temperatures
    negatives: Annotated[list[Annotated[int, Field(ge=1, le=100_000)]], Field(min_length=2)]   # M
    seed: Seed


class Limits(Strict):
    mi_bound: MiBound
    collapse: CollapseFloor
    decomposition: Decomposition


class ExampleParams(Strict):
    ntxent_numpy: NtXentExample
    tiny_simclr: TinySimCLR
    toy2d: Toy2D
    limits: Limits


# ---------------------------------------------------------------- pretraining

DatasetName = Literal["glyphs100", "shapes", "shapes4", "digits", "imagefolder", "cifar10"]
FOLDER_DATASETS = ("imagefolder", "cifar10")        # read from a user's folder at run time


class RunConfig(Strict):
    """One pretraining condition; every seed of it shares these settings."""
    dataset: DatasetName
    encoder: Literal["cnn3", "resnet18"]
    method: Literal["simclr", "moco", "memory_bank", "supcon", "supervised", "align_uniform"]
    loss: Literal["nt_xent", "logistic", "margin_triplet", "siglip", "debiased_nt_xent"]
    negatives: Literal["semi_hard", "hardest", "all"]   # which negatives the logistic / triplet losses use
    tau: Temperature
    learn_tau: bool                                   # NT-Xent: a learned temperature, starting at tau
    tau_plus: Annotated[float, Field(ge=0, lt=1)] | None   # debiased NT-Xent's class prior (only there)
    normalize: bool
    head: Literal["none", "linear", "mlp"]
    proj_dim: Annotated[int, Field(ge=1, le=8192)]    # z's width for a linear or MLP head
    batch: Batch
    negatives_kept: Count | None                      # NT-Xent: k negatives per anchor (None: all 2N - 2)
    drop_same_class: bool                             # NT-Xent: drop the anchor's same-class negatives by label
    lam: Weight                                       # align-uniform: the uniformity term's weight
    siglip_t: Annotated[float, Field(ge=1 / MAX_TAU, le=1 / MIN_TAU)]   # SigLIP: the learned t's (1 / tau) starting value
    siglip_b: Annotated[float, Field(ge=-MAX_TAU, le=MAX_TAU)]         # SigLIP: the learned b's starting value (a logit)
    checkpoints: Annotated[list[Steps], Field(max_length=MAX_LIST)]   # earlier rungs, below steps: descriptive, for trends
    steps: Steps                                      # the budget: claims that read `eval` read the run at this step
    ladder: Annotated[list[Steps], Field(max_length=MAX_LIST)]        # later rungs: training goes on to the last, with a checkpoint at each
    lr: Rate                                          # Adam's rate at lr_reference_batch (batch_lr: at this batch)
    lr_rule: Literal["sqrt", "none"]                  # sqrt: the rate scales with sqrt(batch / lr_reference_batch)
    lr_reference_batch: Batch
    schedule: Literal["constant", "cosine", "wsd"]
    margin: Annotated[float, Field(ge=0), _at_most(MAX_MARGIN, "MAX_MARGIN in run/config.py")]   # margin-triplet loss
    momentum: Annotated[float, Field(ge=0, le=1)]     # MoCo key encoder / memory bank update
    queue: Annotated[int, Field(ge=1, le=MAX_IMAGES)]  # MoCo queue length K, bank negatives
    bn_groups: Annotated[int, Field(ge=1, le=MAX_BATCH)]                                 # simulated devices, each with its own BN
    ranks: Annotated[int, Field(ge=1, le=64)]         # processes sharing the batch (torch.distributed)
    shuffle_bn: bool
    supcon_inside: bool
    blur: bool
    colour: bool                                      # colour jitter and grayscale among the augmentations
    colour_strength: Annotated[float, Field(ge=0, lt=2.5)]   # jitter factors 1 +- 0.4 x this: positive below 2.5
    crop_min_side: Annotated[float, Field(gt=0, le=1)]       # crop side ~ U(crop_min_side, 1)
    rotate: bool
    channels_last: bool       # NHWC tensors: about 1.5x faster convolutions on CPU (last-bit changes)

    @property
    def batch_lr(self):
        """The rate Adam runs at: lr scaled to the batch by the square-root rule (SimCLR scales its
        rate with the batch; the square root is the usual form for Adam), or lr as it is."""
        return self.lr * math.sqrt(self.batch / self.lr_reference_batch) if self.lr_rule == "sqrt" else self.lr

    @model_validator(mode="after")
    def _groups_divide_batch(self):
        if self.batch % (self.ranks * self.bn_groups):
            raise ValueError(f"ranks x bn_groups ({self.ranks} x {self.bn_groups}) must divide batch ({self.batch})")
        return self

    # A knob set where nothing reads it would make a condition differ from its default in name
    # only: each is checked against the fields above it, so that the error names the knob.
    @field_validator("learn_tau")
    @classmethod
    def _learned_tau_for_nt_xent(cls, value, info):
        if value and (info.data.get("method"), info.data.get("loss")) != ("simclr", "nt_xent"):
            raise ValueError("needs method simclr with loss nt_xent")
        return value

    @field_validator("negatives_kept")
    @classmethod
    def _kept_negatives_for_nt_xent(cls, value, info):
        if value is None:
            return value
        if (info.data.get("method"), info.data.get("loss")) != ("simclr", "nt_xent"):
            raise ValueError("needs method simclr with loss nt_xent")
        if "batch" in info.data and value > 2 * info.data["batch"] - 2:
            raise ValueError(f"must not exceed the 2 x batch - 2 = {2 * info.data['batch'] - 2} negatives of each anchor")
        return value

    @field_validator("drop_same_class")
    @classmethod
    def _dropping_for_nt_xent(cls, value, info):
        if value and (info.data.get("method"), info.data.get("loss")) != ("simclr", "nt_xent"):
            raise ValueError("needs method simclr with loss nt_xent")
        if value and info.data.get("negatives_kept") is not None:
            raise ValueError("cannot be combined with negatives_kept (both choose the negatives)")
        return value

    @field_validator("tau_plus")
    @classmethod
    def _prior_for_the_debiased_loss(cls, value, info):
        if (value is None) == (info.data.get("loss") == "debiased_nt_xent"):
            raise ValueError("the class prior is set for loss debiased_nt_xent, and only for it")
        return value

    @field_validator("bn_groups")
    @classmethod
    def _groups_where_the_method_has_them(cls, value, info):
        if value > 1 and info.data.get("method") not in ("simclr", "align_uniform", "moco"):
            raise ValueError(f"method {info.data.get('method')} has no BN groups (simclr, align_uniform and moco have)")
        return value

    @field_validator("colour_strength")
    @classmethod
    def _strength_with_jitter(cls, value, info):
        if value != 1.0 and info.data.get("colour") is False:
            raise ValueError("has no effect with colour: false")
        return value

    @model_validator(mode="after")
    def _rungs_rise(self):
        if any(b <= a for a, b in zip(self.checkpoints, [*self.checkpoints[1:], self.steps])):
            raise ValueError(f"checkpoints {excerpt(self.checkpoints)} must rise and stay below steps ({self.steps})")
        if any(b <= a for a, b in zip([self.steps, *self.ladder], self.ladder)):
            raise ValueError(f"ladder {excerpt(self.ladder)} must rise above steps ({self.steps})")
        if (self.ladder or self.checkpoints) and self.schedule != "constant":
            raise ValueError("rungs need schedule: constant (a rung of a longer decayed run is not a shorter run)")
        return self

    @property
    def rungs(self):
        """The steps with a checkpoint: 0 (the untrained control), the earlier checkpoints, steps, and the
        ladder's rungs."""
        return [0, *self.checkpoints, self.steps, *self.ladder]


class PretrainParams(Strict):
    """studies: study name -> {condition name -> overrides of defaults, and an optional `label`
    for plots}. One DVC stage per study trains all its conditions and seeds; condition names are
    unique across studies. The overrides are checked one by one in parse_params."""
    seeds: Seeds
    steps_scale: Annotated[float, Field(gt=0, le=1000)]   # every condition's steps x this (profiles)
    ladders: bool                                         # false: no run goes on past its budget
    defaults: RunConfig
    studies: Annotated[dict[str, Annotated[dict[str, dict | None], Field(min_length=1)]], Field(min_length=1)]

    @property
    def conditions(self):
        """condition name -> its study."""
        return {name: study for study, conditions in self.studies.items() for name in conditions}

    def label(self, name):
        return (self.studies[self.conditions[name]][name] or {}).get("label", name)

    def run_config(self, name):
        study = self.conditions.get(name)
        if study is None:
            raise KeyError(f"unknown condition {name!r}; known: {', '.join(self.conditions)}")
        overrides = {k: v for k, v in (self.studies[study][name] or {}).items() if k != "label"}
        if not self.ladders:
            overrides["ladder"] = overrides["checkpoints"] = []
        cfg = RunConfig(**{**self.defaults.model_dump(), **overrides})
        scale = lambda steps: max(1, round(steps * self.steps_scale))
        steps = scale(cfg.steps)
        ladder = sorted({scale(s) for s in cfg.ladder} - {steps})
        checkpoints = sorted({scale(s) for s in cfg.checkpoints} - {steps})
        return RunConfig(**{**cfg.model_dump(), "checkpoints": checkpoints, "steps": steps, "ladder": ladder})


class EvaluateParams(Strict):
    n_labelled: Annotated[int, Field(ge=4, le=MAX_IMAGES)]   # labelled images for the probes when labels_per_class is None
    labels_per_class: Annotated[int, Field(ge=1, le=MAX_IMAGES)] | None   # a seeded draw of this many labelled images of each class
    n_test: Annotated[int, Field(ge=4, le=MAX_IMAGES)]
    n_views: Annotated[int, Field(ge=4, le=MAX_IMAGES)]      # the first n_views test images: views, rotations, grayscale
    probe_steps: Steps
    probe_lr: Rate
    probe_l2: Annotated[float, Field(ge=0), _at_most(MAX_WEIGHT, "MAX_WEIGHT in run/config.py: every weight pinned at 0")]
    probe_standardize: bool
    knn_k: Annotated[int, Field(ge=1, le=MAX_IMAGES)]
    wknn_k: Annotated[int, Field(ge=1, le=MAX_IMAGES)]
    wknn_t: Temperature

    @model_validator(mode="after")
    def _neighbours_within_the_labelled_set(self):
        for key in ("knn_k", "wknn_k"):
            if self.labels_per_class is None and getattr(self, key) > self.n_labelled:
                raise ValueError(f"{key} ({getattr(self, key)}) must not exceed n_labelled ({self.n_labelled})")
        return self


class DeterminismParams(Strict):
    """One short pretraining of a condition, repeated, and at other thread counts."""
    condition: str
    seed: Seed
    steps: Steps
    thread_counts: Annotated[list[Threads], Field(min_length=1, max_length=MAX_LIST)]


class ControlParams(Strict):
    """BatchNorm statistics re-estimated before every probe on this many consecutive batches of
    training images (src/replication/run/calibration.py); the step-0 one is the calibrated control."""
    bn_batches: Annotated[int, Field(ge=1, le=10_000)]
    bn_batch_size: Batch


class Params(Strict):
    profile: str
    threads: Threads
    device: Literal["auto", "cpu", "cuda"]     # auto: CUDA when torch sees a GPU
    precision: Literal["fp32", "bf16"]         # bf16: encoder and head under bfloat16 autocast (CPU and CUDA)
    workers: Annotated[int, Field(ge=1, le=64)]
    data: DataParams
    examples: ExampleParams
    evaluate: EvaluateParams
    pretrain: PretrainParams
    determinism: DeterminismParams
    control: ControlParams
    profiles: dict[str, dict | None]


# ---------------------------------------------------------------- what each stage reads

class RunData(Strict):
    """The data settings a training or evaluation stage needs: the generated datasets come from
    data/ (a file dependency); a folder dataset needs its settings here."""
    image_size: int
    imagefolder: FolderData | None = None
    cifar10: FolderData | None = None


class Execution(Strict):
    """Where and how runs execute: these change float results (threads, device, precision)."""
    threads: Threads
    device: Literal["auto", "cpu", "cuda"]
    precision: Literal["fp32", "bf16"]


class StudyConfig(Strict):
    """resolved/pretrain/<study>.json: every condition of one study, resolved, and its seeds."""
    study: str
    seeds: Seeds
    execution: Execution
    data: RunData
    conditions: dict[str, RunConfig]


class EvaluateConfig(Strict):
    """resolved/evaluate.json: the probes' settings, the BatchNorm re-estimation before them, and
    where they run."""
    execution: Execution
    evaluate: EvaluateParams
    control: ControlParams


class DeterminismConfig(Strict):
    """resolved/determinism.json: one condition, shortened, trained and evaluated repeatedly."""
    determinism: DeterminismParams
    run: RunConfig
    execution: Execution
    data: RunData
    evaluate: EvaluateParams


def _run_data(params, configs):
    used = {cfg.dataset for cfg in configs}
    return RunData(image_size=params.data.image_size,
                   **{name: getattr(params.data, name) for name in FOLDER_DATASETS if name in used})


def resolve(params):
    """{path under resolved/: content} for every stage. `workers.json` only says how many runs go
    in parallel, which changes no result, so no stage depends on it."""
    execution = Execution(threads=params.threads, device=params.device, precision=params.precision)
    p = params.pretrain
    out = {"data.json": params.data.model_dump(),
           "workers.json": {"workers": params.workers},
           "evaluate.json": EvaluateConfig(execution=execution, evaluate=params.evaluate,
                                           control=params.control).model_dump()}
    for name, example in params.examples:
        out[f"examples/{name}.json"] = example.model_dump()
    for study, names in p.studies.items():
        configs = {name: p.run_config(name) for name in names}
        out[f"pretrain/{study}.json"] = StudyConfig(
            study=study, seeds=p.seeds, execution=execution, data=_run_data(params, configs.values()),
            conditions=configs).model_dump()
    det = params.determinism
    run = p.run_config(det.condition).model_copy(update={"steps": det.steps, "ladder": [], "checkpoints": []})
    out["determinism.json"] = DeterminismConfig(determinism=det, run=run, execution=execution,
                                                data=_run_data(params, [run]), evaluate=params.evaluate).model_dump()
    out["conditions.json"] = {"seeds": p.seeds, "conditions": {
        name: {"study": study, "label": p.label(name), "steps": p.run_config(name).steps,
               "rungs": p.run_config(name).rungs}
        for name, study in p.conditions.items()}}
    out["report.json"] = {"profile": params.profile, "threads": params.threads, "workers": params.workers,
                          "config_sha256": digest({k: v for k, v in out.items() if k != "workers.json"})}
    return out


def read_resolved(name, model=None, root="."):
    """resolved/<name>.json, as `model` when given; a missing file names the command that writes it."""
    path = Path(root, RESOLVED, f"{name}.json")
    if not path.exists():
        print(f"error: {path}: missing; write it with `dvc repro resolve`", file=sys.stderr)
        raise SystemExit(2)
    raw = json.loads(path.read_text())
    return model(**raw) if model else raw


# ---------------------------------------------------------------- loading

class ParamsError(Exception):
    """A params file that cannot be used; str(e) is the one line to print."""


def _deep_merge(base, overrides):
    out = copy.deepcopy(base)
    for key, value in (overrides or {}).items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _model_at(model, loc):
    """The pydantic model that holds the last key of `loc`, or None where a plain dict does."""
    for part in loc:
        field = model.model_fields.get(part) if isinstance(part, str) else None
        annotation = getattr(field, "annotation", None)
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return None
        model = annotation
    return model


def _one_line(error, model, where=""):
    """'key.path: what is wrong' for the first error of a ValidationError of `model`; `where` is
    the path of the validated mapping inside params.yaml; an unknown key lists the allowed ones."""
    def allowed(loc):
        holder = _model_at(model, loc)
        names = sorted(holder.model_fields) if holder else []
        return sorted(names + ["label"]) if holder is RunConfig and where else names
    return one_line(error, where, sep=".", allowed=allowed)


def check_name(name, where):
    """A study, condition or profile name becomes a path (resolved/pretrain/<study>.json) and a DVC
    stage name (pretrain@<study>), so only [a-z0-9_] is allowed: no '..', '/', space or capital."""
    if not (isinstance(name, str) and NAME.fullmatch(name)):
        raise ParamsError(f"{where}: name {excerpt(name)} {NAME_RULE}")


def _check_conditions(params):
    """Each condition's overrides on their own, so that an error names the condition's own key."""
    seen = {}
    for study, conditions in params.pretrain.studies.items():
        check_name(study, f"pretrain.studies.{study}")
        for name in conditions:
            check_name(name, f"pretrain.studies.{study}.{name}")
            if name in seen:
                raise ParamsError(f"pretrain.studies.{study}.{name}: condition also in study {seen[name]}; "
                                  "condition names must be unique")
            seen[name] = study
    for study, conditions in params.pretrain.studies.items():
        for name, overrides in conditions.items():
            where = f"pretrain.studies.{study}.{name}"
            overrides = dict(overrides or {})
            label = overrides.pop("label", name)
            if not isinstance(label, str):
                raise ParamsError(f"{where}.label: must be text (got {excerpt(label)})")
            if {"batch", "lr"} <= set(overrides) and "lr_rule" not in overrides:
                raise ParamsError(f"{where}.lr: set with its own batch, say which rate it is: add lr_rule: sqrt (lr "
                                  "is the rate at lr_reference_batch, scaled to the batch) or lr_rule: none (the "
                                  "rate at this batch)")
            try:
                params.pretrain.run_config(name)
            except ValidationError as e:
                raise ParamsError(_one_line(e, RunConfig, where)) from None
    if params.determinism.condition not in seen:
        raise ParamsError(f"determinism.condition: {excerpt(params.determinism.condition)} is not a condition of "
                          "pretrain.studies")


# ---------------------------------------------------------------- bounds from the data and the machine

def dataset_sizes(data, name, folder):
    """(training images, test images, training images of the least class, where these come from) of a
    generated dataset: its manifest's (folder/<name>.json) when the manifest was built at the sizes
    params.yaml sets, else the generator's sizes in params.yaml (a class then holds at most the mean,
    n_train / classes; None where unknown). None for a folder dataset, read only at run time."""
    if name in FOLDER_DATASETS:
        return None
    p = getattr(data, name)
    manifest = Path(folder, f"{name}.json")
    try:
        found = json.loads(manifest.read_text())
        built = (found["shape"]["train"][0], found["shape"]["test"][0])
        least, classes = min(found["counts"]["train"]), len(found["classes"])
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return getattr(p, "n_train", None), p.n_test, None, f"data.{name}"
    n_train = getattr(p, "n_train", built[0])
    if built == (n_train, p.n_test):
        return n_train, p.n_test, least, str(manifest)
    return getattr(p, "n_train", None), p.n_test, n_train // classes if hasattr(p, "n_train") else None, \
        f"data.{name}.n_train / {classes} classes"


def check_data_bounds(params, folder="data"):
    """The probes ask no more images than the pretraining datasets hold (dataset_sizes): n_test, n_views
    and n_labelled at most the largest set (a smaller dataset's probes take all of its own; unknown
    while a folder dataset is among them), and labels_per_class at most the least class of every
    dataset."""
    e = params.evaluate
    sizes = {name: dataset_sizes(params.data, name, folder)
             for name in sorted({params.pretrain.run_config(c).dataset for c in params.pretrain.conditions})}
    known = {name: size for name, size in sizes.items() if size is not None}
    if known != sizes:
        sizes = {}           # the largest set is a folder's, of a size known only at run time
    for name, (_, _, least, source) in known.items():
        if e.labels_per_class is not None and least is not None and e.labels_per_class > least:
            raise ParamsError(f"evaluate.labels_per_class: {e.labels_per_class:,} of each class, but a class of "
                              f"{name} has {least:,} training images ({source}); lower it to at most {least:,}, "
                              "or set it to null (the first n_labelled)")
    if not sizes:
        return
    largest = max(known, key=lambda name: known[name][1])
    if e.n_test > known[largest][1] or e.n_views > known[largest][1]:
        key, value = ("n_test", e.n_test) if e.n_test > known[largest][1] else ("n_views", e.n_views)
        raise ParamsError(f"evaluate.{key}: {value:,} test images, but the largest test set, {largest}'s, has "
                          f"{known[largest][1]:,} (data.{largest}.n_test); lower it to at most {known[largest][1]:,}")
    trains = {name: size[0] for name, size in known.items() if size[0] is not None}
    if e.labels_per_class is None and trains and e.n_labelled > max(trains.values()):
        name = max(trains, key=trains.get)
        raise ParamsError(f"evaluate.n_labelled: {e.n_labelled:,} labelled images, but the largest training set, "
                          f"{name}'s, has {trains[name]:,} ({known[name][3]}); lower it to at most {trains[name]:,}")


def memory_bytes():
    """This machine's memory (MemTotal), in bytes."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def check_memory(params, memory=None):
    """Each queue of negatives (MoCo's keys, the memory bank's draws: queue x proj_dim x 4 bytes of
    float32, for a condition with a head; without one the keys are at most 512 wide) fits in this
    machine's memory (memory_bytes)."""
    memory = memory or memory_bytes()
    for name, study in params.pretrain.conditions.items():
        cfg = params.pretrain.run_config(name)
        needed = cfg.queue * cfg.proj_dim * 4
        if cfg.method in ("moco", "memory_bank") and cfg.head != "none" and needed > memory:
            raise ParamsError(f"pretrain.studies.{study}.{name}.queue: {cfg.queue:,} keys x {cfg.proj_dim:,} dims x "
                              f"4 bytes = {needed / 1e9:.1f} GB, beyond this machine's {memory / 1e9:.1f} GB of "
                              "memory (MemTotal); lower queue or proj_dim")


def thread_warning(params, cores=None):
    """A line when threads x workers ask more cores than the machine has (runs then contend: slower,
    not wrong), else None."""
    cores = cores or os.cpu_count()
    if params.threads * params.workers > cores:
        return (f"warning: threads x workers = {params.threads} x {params.workers} on {cores} cores; the runs will "
                "contend for them (lower workers or threads)")
    return None


def _check_integers(value, where=""):
    """No integer beyond int64 anywhere (NumPy and torch hold counts and seeds in int64; a bigger
    one ends in an overflow traceback), whatever its own bound."""
    if isinstance(value, dict):
        for key, item in value.items():
            _check_integers(item, f"{where}.{key}".lstrip("."))
    elif isinstance(value, list):
        for item in value:
            _check_integers(item, where)
    elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
        raise ParamsError(f"{where}: {excerpt(value)} is beyond a 64-bit integer (at most {MAX_INT:,}: NumPy's "
                          "and torch's int64)")


def parse_params(raw, source="params.yaml"):
    """Validate a params mapping (active profile applied) and return a Params object, or raise
    ParamsError whose text is one line naming the key. Beyond the schema: no integer beyond int64,
    the probes' counts within every pretraining dataset (check_data_bounds, every profile) and the
    queues within this machine's memory (check_memory, the active profile)."""
    if not isinstance(raw, dict):
        raise ParamsError(f"{source}: expected a mapping at the top level")
    try:
        _check_integers(raw)
    except ParamsError as e:
        raise ParamsError(f"{source}: {e}") from None
    profile = raw.get("profile")
    profiles = raw.get("profiles")
    if not isinstance(profiles, dict):
        raise ParamsError(f"{source}: profiles: must be a mapping of profile name to overrides")
    for name, overrides in profiles.items():
        try:
            check_name(name, f"profiles.{name}")
        except ParamsError as e:
            raise ParamsError(f"{source}: {e}") from None
        if not isinstance(overrides, dict | None):
            raise ParamsError(f"{source}: profiles.{name}: must be a mapping of overrides (got {excerpt(overrides)})")
        if chooser := next((key for key in ("profile", "profiles") if key in (overrides or {})), None):
            raise ParamsError(f"{source}: profiles.{name}.{chooser}: a profile cannot choose or define profiles "
                              "(it would apply under another name); remove the key")
    if profile not in profiles:
        raise ParamsError(f"{source}: profile: unknown profile {excerpt(profile)}; allowed: {', '.join(profiles)}")
    params = _with_profile(raw, profile, source)
    for other in profiles:      # an inactive profile is checked too: it breaks nothing until selected
        if other != profile:
            _with_profile({**raw, "profile": other}, other, source)
    try:
        check_memory(params)
    except ParamsError as e:
        raise ParamsError(f"{source}: {e}") from None
    return params


def _with_profile(raw, profile, source):
    """Params with one profile's overrides applied, or ParamsError naming the key (and the profile)."""
    overrides = raw["profiles"][profile]
    after = f" (after applying profile {profile})" if overrides else ""
    try:
        params = Params(**_deep_merge(raw, overrides))
        _check_conditions(params)
        check_data_bounds(params, Path(source).parent / "data")
    except ValidationError as e:
        raise ParamsError(f"{source}: {_one_line(e, Params)}{after}") from None
    except ParamsError as e:
        raise ParamsError(f"{source}: {e}{after}") from None
    return params


def read_yaml(path, max_bytes=MAX_BYTES):
    """A YAML file that DVC or a tool reads (params.yaml, analysis/stage_two.yaml, dvc.lock: DVC's own
    reader expands an alias bomb without end), or ParamsError naming it: missing or unreadable, over
    max_bytes, not UTF-8, a key given twice, aliases that expand without bound, not YAML."""
    path = Path(path)
    try:
        if path.stat().st_size > max_bytes:
            raise ParamsError(f"{path}: {path.stat().st_size:,} bytes, over the {max_bytes:,} such a file of the "
                              "project may have (run/config.py, committed.py); restore it (git checkout)")
        return load_yaml(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ParamsError(f"{path}: file not found") from None
    except UnicodeDecodeError as e:
        raise ParamsError(f"{path}: not UTF-8 text (byte {e.start}); save it as UTF-8") from None
    except DuplicateKeyError as e:
        raise ParamsError(f"{path}: {e}; keep one of them") from None
    except ExpansionError as e:
        raise ParamsError(f"{path}: {e}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise ParamsError(f"{path}: not valid YAML{where}") from None
    except OSError as e:
        raise ParamsError(f"{path}: cannot be read ({e.strerror or e})") from None


def read_params(path="params.yaml"):
    return parse_params(read_yaml(path), source=str(path))


def check_device(params, source="params.yaml", available=None):
    """device: cuda only on a machine where torch sees a CUDA device (`available`; torch is imported
    only for device: cuda, so that the check stays quick), else ParamsError: every stage that trains
    or evaluates would stop on it."""
    if params.device != "cuda":
        return
    if available is None:
        import torch
        available = torch.cuda.is_available()
    if not available:
        raise ParamsError(f"{source}: device: cuda, but torch sees no CUDA device on this machine; set device: "
                          "auto (the GPU where there is one) or cpu")


def load_params(path="params.yaml"):
    """read_params for an entry point: on a bad file or device: cuda without a GPU (check_device) print
    one line and exit with status 2; threads x workers beyond the cores print a warning line
    (thread_warning)."""
    try:
        params = read_params(path)
        check_device(params, path)
    except ParamsError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    warning = thread_warning(params)
    if warning:
        print(warning, file=sys.stderr)
    return params


if __name__ == "__main__":
    p = load_params(sys.argv[1] if len(sys.argv) > 1 else "params.yaml")
    print(f"params ok (profile {p.profile})")
