"""The params.yaml schema: every knob that changes a result, typed and range-checked.

`load_params()` reads params.yaml, applies the selected profile's overrides and validates the whole
file before any stage computes. A bad file ends the process with exit status 2 and one line that
names the key and what is allowed; nothing is written.

    python -m contrastive.config [params.yaml]     # validate only
"""
import copy
import sys
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

PositiveFloat = Annotated[float, Field(gt=0)]
Seeds = Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=1)]
Threads = Annotated[int, Field(ge=1, le=64)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False, frozen=True)


# ---------------------------------------------------------------- data

class ShapesData(Strict):
    seed: int = 0
    n_train: Annotated[int, Field(ge=10)] = 5000
    n_test: Annotated[int, Field(ge=10)] = 2000
    clutter: Annotated[int, Field(ge=0, le=20)] = 2      # distractor blobs per image
    texture: Annotated[float, Field(ge=0, le=1)] = 0.1   # amplitude of the background stripes
    noise: Annotated[float, Field(ge=0, le=1)] = 0.05    # per-pixel Gaussian noise


class Shapes4Data(Strict):
    seed: int = 0
    n_train: Annotated[int, Field(ge=10)] = 2000
    n_test: Annotated[int, Field(ge=10)] = 1000


class DigitsData(Strict):
    seed: int = 0
    n_test: Annotated[int, Field(ge=10, le=1000)] = 500


class FolderData(Strict):
    root: str | None = None          # where the images are; read at run time, never downloaded
    seed: int = 0
    n_test: Annotated[float, Field(gt=0, lt=1)] = 0.2   # imagefolder: held-out fraction


class DataParams(Strict):
    image_size: Annotated[int, Field(ge=8, le=256)] = 32
    shapes: ShapesData = ShapesData()
    shapes4: Shapes4Data = Shapes4Data()
    digits: DigitsData = DigitsData()
    imagefolder: FolderData = FolderData()
    cifar10: FolderData = FolderData()


# ---------------------------------------------------------------- examples

class NtXentExample(Strict):
    loss_tau: PositiveFloat = 0.2
    taus: Annotated[list[PositiveFloat], Field(min_length=1)] = [0.05, 0.2, 1.0]
    fd_step: Annotated[float, Field(gt=0, lt=1e-2)] = 1e-6


class TinySimCLR(Strict):
    seeds: Seeds = list(range(10))
    steps: Annotated[int, Field(ge=1)] = 300
    batch: Annotated[int, Field(ge=2)] = 128
    tau: PositiveFloat = 0.2
    threads: Threads = 1
    thread_check_seed: Annotated[int, Field(ge=0)] = 3
    thread_counts: Annotated[list[Threads], Field(min_length=1)] = [1, 2, 4]


class Toy2D(Strict):
    seeds: Seeds = list(range(10))
    taus: Annotated[list[PositiveFloat], Field(min_length=1)] = [0.05, 0.1, 0.5, 1.0]
    steps: Annotated[int, Field(ge=1)] = 600
    batch: Annotated[int, Field(ge=2)] = 128
    lr: PositiveFloat = 5e-3
    n_eval: Annotated[int, Field(ge=20)] = 800
    n_classes: Annotated[int, Field(ge=2)] = 4
    class_spread: Annotated[float, Field(ge=0)] = 0.5   # sd of a sample's own offset from its class centre
    view_noise: Annotated[float, Field(ge=0)] = 0.3     # sd of the noise an augmentation adds
    knn_k: Annotated[int, Field(ge=1)] = 10


class ExampleParams(Strict):
    ntxent_numpy: NtXentExample = NtXentExample()
    tiny_simclr: TinySimCLR = TinySimCLR()
    toy2d: Toy2D = Toy2D()


# ---------------------------------------------------------------- pretraining

DatasetName = Literal["shapes", "shapes4", "digits", "imagefolder", "cifar10"]


class RunConfig(Strict):
    """One pretraining condition; every seed of it shares these settings."""
    dataset: DatasetName = "shapes"
    encoder: Literal["cnn3", "resnet18"] = "cnn3"
    method: Literal["simclr", "moco", "memory_bank", "supcon", "supervised", "align_uniform"] = "simclr"
    loss: Literal["nt_xent", "logistic", "margin_triplet", "siglip"] = "nt_xent"
    tau: PositiveFloat = 0.2
    normalize: bool = True
    head: Literal["none", "linear", "mlp"] = "mlp"
    batch: Annotated[int, Field(ge=2)] = 128
    steps: Annotated[int, Field(ge=1)] = 300
    lr: PositiveFloat = 1e-3
    schedule: Literal["constant", "cosine"] = "constant"
    margin: Annotated[float, Field(ge=0)] = 0.5          # margin-triplet loss
    momentum: Annotated[float, Field(ge=0, le=1)] = 0.99  # MoCo key encoder / memory bank update
    queue: Annotated[int, Field(ge=1)] = 1024             # MoCo queue length K, bank negatives
    bn_groups: Annotated[int, Field(ge=1)] = 1            # simulated devices, each with its own BN
    ranks: Annotated[int, Field(ge=1, le=64)] = 1         # processes sharing the batch (torch.distributed)
    shuffle_bn: bool = False
    supcon_inside: bool = False
    blur: bool = False
    rotate: bool = False
    channels_last: bool = True     # NHWC tensors: about 1.5x faster convolutions on CPU (last-bit changes)

    @model_validator(mode="after")
    def _groups_divide_batch(self):
        if self.batch % (self.ranks * self.bn_groups):
            raise ValueError(f"ranks x bn_groups ({self.ranks} x {self.bn_groups}) must divide batch ({self.batch})")
        return self


class PretrainParams(Strict):
    """studies: study name -> {condition name -> overrides of defaults}. One DVC stage per study
    runs all its conditions and seeds; condition names are unique across studies."""
    seeds: Seeds = [0, 1, 2, 3, 4]
    steps_scale: Annotated[float, Field(gt=0, le=1000)] = 1.0   # every condition's steps x this (profiles)
    defaults: RunConfig = RunConfig()
    studies: Annotated[dict[str, Annotated[dict[str, dict | None], Field(min_length=1)]], Field(min_length=1)]

    @model_validator(mode="after")
    def _conditions_are_valid_runs(self):
        seen = set()
        for study, conditions in self.studies.items():
            for name, overrides in conditions.items():
                if name in seen:
                    raise ValueError(f"condition {name} appears in more than one study")
                seen.add(name)
                try:
                    RunConfig(**{**self.defaults.model_dump(), **(overrides or {})})
                except ValidationError as e:
                    raise ValueError(f"studies.{study}.{name}: {_one_line(e, prefix='')}") from None
        return self

    @property
    def conditions(self):
        """condition name -> its study."""
        return {name: study for study, conditions in self.studies.items() for name in conditions}

    def run_config(self, name):
        study = self.conditions.get(name)
        if study is None:
            raise KeyError(f"unknown condition {name!r}; known: {', '.join(self.conditions)}")
        cfg = RunConfig(**{**self.defaults.model_dump(), **(self.studies[study][name] or {})})
        return cfg.model_copy(update={"steps": max(1, round(cfg.steps * self.steps_scale))})


class EvaluateParams(Strict):
    n_labelled: Annotated[int, Field(ge=4)] = 2000   # labelled images for the probes
    n_test: Annotated[int, Field(ge=4)] = 2000
    probe_steps: Annotated[int, Field(ge=1)] = 300
    probe_lr: PositiveFloat = 0.05
    probe_l2: Annotated[float, Field(ge=0)] = 1e-3
    probe_standardize: bool = True
    knn_k: Annotated[int, Field(ge=1)] = 5
    wknn_k: Annotated[int, Field(ge=1)] = 200
    wknn_t: PositiveFloat = 0.1


class DeterminismParams(Strict):
    """One short pretraining of a condition, repeated, and at other thread counts."""
    condition: str = "simclr"
    seed: Annotated[int, Field(ge=0)] = 0
    steps: Annotated[int, Field(ge=1)] = 100
    thread_counts: Annotated[list[Threads], Field(min_length=1)] = [1, 2]


class Params(Strict):
    profile: str = "default"
    threads: Threads = 1
    device: Literal["auto", "cpu", "cuda"] = "auto"   # auto: CUDA when torch sees a GPU
    amp: bool = True                                  # bfloat16 autocast on CUDA (no effect on CPU)
    workers: Annotated[int, Field(ge=1, le=64)] = 2
    data: DataParams = DataParams()
    examples: ExampleParams = ExampleParams()
    evaluate: EvaluateParams = EvaluateParams()
    pretrain: PretrainParams
    determinism: DeterminismParams = DeterminismParams()
    profiles: dict[str, dict] = {}

    @model_validator(mode="after")
    def _determinism_condition_exists(self):
        if self.determinism.condition not in self.pretrain.conditions:
            raise ValueError(f"determinism.condition: {self.determinism.condition!r} is not a condition "
                             "of pretrain.studies")
        return self


# ---------------------------------------------------------------- loading

class ParamsError(Exception):
    """A params file that cannot be used; str(e) is the one line to print."""


def _deep_merge(base, overrides):
    out = copy.deepcopy(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _allowed_keys(loc):
    """Field names of the model that holds the key at `loc`, for an 'unknown key' message."""
    model = Params
    for part in loc[:-1]:
        field = model.model_fields.get(part) if isinstance(part, str) else None
        if field is None or not (isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)):
            return None
        model = field.annotation
    return sorted(model.model_fields)


def _one_line(error, prefix="params.yaml: "):
    err = error.errors()[0]
    loc = tuple(p for p in err["loc"] if p != "__root__")
    key = ".".join(str(p) for p in loc) or "(top level)"
    if err["type"] == "extra_forbidden":
        allowed = _allowed_keys(loc)
        return f"{prefix}{key}: unknown key" + (f"; allowed: {', '.join(allowed)}" if allowed else "")
    msg = err["msg"].removeprefix("Value error, ")
    shown = "" if err["type"] == "missing" else f" (got {err.get('input')!r})"
    return f"{prefix}{key}: {msg}{shown}"


def parse_params(raw, source="params.yaml"):
    """Validate a params mapping (profile applied) and return a Params object, or raise ParamsError."""
    if not isinstance(raw, dict):
        raise ParamsError(f"{source}: expected a mapping at the top level")
    profile = raw.get("profile", "default")
    profiles = raw.get("profiles") or {}
    if not isinstance(profiles, dict):
        raise ParamsError(f"{source}: profiles: must be a mapping of profile name to overrides")
    if profile != "default":
        if profile not in profiles:
            raise ParamsError(f"{source}: profile: unknown profile {profile!r}; allowed: default, "
                              + ", ".join(profiles))
        raw = _deep_merge(raw, profiles[profile])
    try:
        return Params(**raw)
    except ValidationError as e:
        raise ParamsError(_one_line(e, prefix=f"{source}: ")) from None


def read_params(path="params.yaml"):
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ParamsError(f"{path}: file not found") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise ParamsError(f"{path}: not valid YAML{where}") from None
    return parse_params(raw, source=str(path))


def load_params(path="params.yaml"):
    """read_params for an entry point: on a bad file print one line and exit with status 2."""
    try:
        return read_params(path)
    except ParamsError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    p = load_params(sys.argv[1] if len(sys.argv) > 1 else "params.yaml")
    print(f"params ok (profile {p.profile})")
