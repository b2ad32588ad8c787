"""The blog post's NumPy experiment: contrastive learning onto the unit circle.

Data: 8-D vectors from K latent classes, x = c_y + spread * e (class centres c ~ N(0, I)); a view
adds independent noise, v = x + noise * e'. Encoder: z = normalise(W2 tanh(W1 x + b1) + b2),
8 -> 32 -> 2, trained by Adam with hand-written backpropagation (through the normalisation).
Class labels never reach the loss; they colour the plots and score a 10-NN classifier.

Random streams per seed: [seed, 0] draws the class centres and the held-out pairs, [seed, 1]
the initial weights, [seed, 2] the training batches. Every temperature of a seed therefore
starts from the same weights and sees the same batches (paired comparisons).

The document gives neither the class spread nor the view noise. One calibration target (the
untrained encoder's 10-NN accuracy) fixes only their combination, since the untrained encoder sees
x + view noise, whose spread around the class centre is sqrt(spread^2 + noise^2). view_noise_sweep
reruns everything at several view noises, each with the class spread re-fitted to the same target.
"""
import numpy as np

from contrastive.losses import normalize_backward, nt_xent_numpy

DIM_IN, DIM_HIDDEN, DIM_OUT = 8, 32, 2


class Problem:
    """Class centres and the sampling of (x, labels) and their views."""

    def __init__(self, rng, n_classes, class_spread, view_noise):
        self.centres = rng.standard_normal((n_classes, DIM_IN))
        self.class_spread, self.view_noise = class_spread, view_noise

    def samples(self, n, rng):
        labels = rng.integers(0, len(self.centres), n)
        return self.centres[labels] + self.class_spread * rng.standard_normal((n, DIM_IN)), labels

    def view(self, x, rng):
        return x + self.view_noise * rng.standard_normal(x.shape)


def init_params(rng):
    return {"W1": rng.standard_normal((DIM_IN, DIM_HIDDEN)) / np.sqrt(DIM_IN), "b1": np.zeros(DIM_HIDDEN),
            "W2": rng.standard_normal((DIM_HIDDEN, DIM_OUT)) / np.sqrt(DIM_HIDDEN), "b2": np.zeros(DIM_OUT)}


def forward(params, x):
    """z = y / |y|, y = W2 tanh(W1 x + b1) + b2; returns z and what backward needs."""
    hidden = np.tanh(x @ params["W1"] + params["b1"])
    y = hidden @ params["W2"] + params["b2"]
    norms = np.linalg.norm(y, axis=1, keepdims=True)
    return y / norms, (x, hidden, norms)


def backward(params, cache, z, dz):
    """Gradients of the loss with respect to every parameter, given dL/dz."""
    x, hidden, norms = cache
    dy = normalize_backward(dz, z, norms)
    dhidden = dy @ params["W2"].T * (1 - hidden**2)
    return {"W1": x.T @ dhidden, "b1": dhidden.sum(0), "W2": hidden.T @ dy, "b2": dy.sum(0)}


def contrastive_objective(z1, z2, tau):
    """NT-Xent over the 2N views [z1; z2] (view i's partner is i + N), and dL/dz1, dL/dz2."""
    n = len(z1)
    loss, dz, _ = nt_xent_numpy(np.concatenate([z1, z2]), np.r_[np.arange(n, 2 * n), np.arange(n)], tau)
    return loss, dz[:n], dz[n:]


def pull_only_objective(z1, z2, tau=None):
    """Only the pulling term: mean ||z1_i - z2_i||^2 (no negatives), and its gradients."""
    diff = z1 - z2
    return float((diff**2).sum(1).mean()), 2 * diff / len(z1), -2 * diff / len(z1)


def loss_and_grads(params, x1, x2, tau, objective=contrastive_objective):
    z1, cache1 = forward(params, x1)
    z2, cache2 = forward(params, x2)
    loss, dz1, dz2 = objective(z1, z2, tau)
    g1, g2 = backward(params, cache1, z1, dz1), backward(params, cache2, z2, dz2)
    return loss, {k: g1[k] + g2[k] for k in params}


class Adam:
    def __init__(self, params, lr, betas=(0.9, 0.999), eps=1e-8):
        self.lr, self.betas, self.eps, self.t = lr, betas, eps, 0
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}

    def step(self, params, grads):
        self.t += 1
        b1, b2 = self.betas
        for k in params:
            self.m[k] = b1 * self.m[k] + (1 - b1) * grads[k]
            self.v[k] = b2 * self.v[k] + (1 - b2) * grads[k] ** 2
            m_hat, v_hat = self.m[k] / (1 - b1**self.t), self.v[k] / (1 - b2**self.t)
            params[k] -= self.lr * m_hat / (np.sqrt(v_hat) + self.eps)


def knn_accuracy(z, labels, k):
    """Leave-one-out k-NN accuracy by cosine similarity among the rows of z (majority vote,
    ties to the smallest label)."""
    s = z @ z.T
    np.fill_diagonal(s, -np.inf)
    neighbours = np.argsort(-s, axis=1, kind="stable")[:, :k]
    votes = np.apply_along_axis(np.bincount, 1, labels[neighbours], minlength=labels.max() + 1)
    return float((votes.argmax(1) == labels).mean())


def alignment(z1, z2):
    return float(((z1 - z2) ** 2).sum(1).mean())


def uniformity(z):
    sq = ((z[:, None] - z[None]) ** 2).sum(-1)[np.triu_indices(len(z), 1)]
    return float(np.log(np.exp(-2 * sq).mean()))


def held_out_metrics(params, x1, x2, labels, tau, batch, k):
    """Metrics on held-out pairs: NT-Xent averaged over whole batches of `batch` pairs (so its
    floor matches training), alignment, uniformity and leave-one-out k-NN on the first views."""
    z1, z2 = forward(params, x1)[0], forward(params, x2)[0]
    chunks = range(0, len(z1) - batch + 1, batch)
    loss = np.mean([contrastive_objective(z1[i:i + batch], z2[i:i + batch], tau)[0] for i in chunks])
    return {"loss": float(loss), "alignment": alignment(z1, z2), "uniformity": uniformity(z1),
            "knn": knn_accuracy(z1, labels, k)}


def run(seed, tau, p, objective=contrastive_objective):
    """Train one encoder; returns metrics before and after and the held-out embeddings' angles."""
    problem = Problem(np.random.default_rng([seed, 0]), p.n_classes, p.class_spread, p.view_noise)
    held_rng = np.random.default_rng([seed, 0, 1])
    x, labels = problem.samples(p.n_eval, held_rng)
    x1, x2 = problem.view(x, held_rng), problem.view(x, held_rng)
    params = init_params(np.random.default_rng([seed, 1]))
    batches = np.random.default_rng([seed, 2])

    def angles():
        z = forward(params, x1)[0]
        return np.arctan2(z[:, 1], z[:, 0]).round(4).tolist()

    before = held_out_metrics(params, x1, x2, labels, tau, p.batch, p.knn_k)
    angles_before = angles()
    opt = Adam(params, p.lr)
    for _ in range(p.steps):
        xb, _ = problem.samples(p.batch, batches)
        loss, grads = loss_and_grads(params, problem.view(xb, batches), problem.view(xb, batches), tau,
                                     objective)
        opt.step(params, grads)
    after = held_out_metrics(params, x1, x2, labels, tau, p.batch, p.knn_k)
    return {"seed": seed, "tau": tau, "before": before, "after": after, "final_train_loss": float(loss),
            "angles_before": angles_before, "angles_after": angles(), "labels": labels.tolist()}


def untrained_knn(seed, p):
    """The untrained encoder's k-NN accuracy on the seed's held-out first views: run()'s before.knn,
    from the same draws, without training."""
    problem = Problem(np.random.default_rng([seed, 0]), p.n_classes, p.class_spread, p.view_noise)
    held_rng = np.random.default_rng([seed, 0, 1])
    x, labels = problem.samples(p.n_eval, held_rng)
    params = init_params(np.random.default_rng([seed, 1]))
    return knn_accuracy(forward(params, problem.view(x, held_rng))[0], labels, p.knn_k)


def fit_class_spread(view_noise, p, upper=2.0, halvings=14):
    """The class spread at which the mean untrained k-NN accuracy over p.calibration_seeds meets
    p.calibration_knn, for this view noise: bisection on [0, upper] (the accuracy falls as the spread
    grows; the draws are fixed, so it is a step function and the fit lands on a step). Returns the
    spread and the mean accuracy there."""
    def mean_knn(spread):
        q = p.model_copy(update={"class_spread": spread, "view_noise": view_noise})
        return float(np.mean([untrained_knn(seed, q) for seed in p.calibration_seeds]))

    low, high = 0.0, upper                   # mean_knn(low) >= target > mean_knn(high), when reachable
    for _ in range(halvings):
        middle = (low + high) / 2
        low, high = (middle, high) if mean_knn(middle) >= p.calibration_knn else (low, middle)
    return low, mean_knn(low)


def view_noise_sweep(p):
    """Every seed x tau again at each view noise of p.sweep_view_noise, with the class spread
    re-fitted to the calibration target: the record of each run (without its angles) with the
    two settings it ran at, and the fits."""
    fits, runs = [], []
    for view_noise in p.sweep_view_noise:
        spread, knn = fit_class_spread(view_noise, p)
        fits.append({"view_noise": view_noise, "class_spread": spread, "calibration_knn": knn})
        q = p.model_copy(update={"class_spread": spread, "view_noise": view_noise})
        for tau in p.taus:
            for seed in p.seeds:
                r = run(seed, tau, q)
                runs.append({"view_noise": view_noise, "class_spread": spread,
                             **{k: v for k, v in r.items() if k not in ("angles_before", "angles_after", "labels")}})
    return {"fits": fits, "runs": runs}


def gradient_check(seed=0, tau=0.5, n=16, eps=1e-6):
    """Largest |hand-written - central-difference| gradient over all parameters, on n pairs."""
    rng = np.random.default_rng([seed, 9])
    problem = Problem(rng, 4, 1.0, 0.5)
    x, _ = problem.samples(n, rng)
    x1, x2 = problem.view(x, rng), problem.view(x, rng)
    params = init_params(rng)
    _, grads = loss_and_grads(params, x1, x2, tau)
    worst = 0.0
    for name, value in params.items():
        for idx in np.ndindex(*value.shape):
            keep = value[idx]
            value[idx] = keep + eps
            plus = loss_and_grads(params, x1, x2, tau)[0]
            value[idx] = keep - eps
            minus = loss_and_grads(params, x1, x2, tau)[0]
            value[idx] = keep
            worst = max(worst, abs((plus - minus) / (2 * eps) - grads[name][idx]))
    return worst
