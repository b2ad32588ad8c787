"""BatchNorm statistics re-estimated on training images before every probe, no weight changed.

A step-0 checkpoint holds BatchNorm's initial running statistics (mean 0, variance 1); a trained
one holds an exponential average over training batches of augmented views, last updated with the
weights of earlier steps. Probed in eval mode with those statistics, the features are normalised
with statistics that do not belong to the encoder being probed, which biases the untrained
control low. The evaluation (replication.run.evaluate) therefore re-estimates them at every
checkpoint and keeps the uncalibrated linear probe of the control and the budget beside it.

The rule (recalibrate_bn): reset every BatchNorm's running statistics and switch it to a
cumulative average (momentum None); pass `batches` fixed, consecutive batches of `batch_size`
training images (x[0:b], x[b:2b], ..., no augmentation) through the modules in train mode without
gradients; restore each BatchNorm's momentum and each module's mode. Each running mean is then the
average of the batches' means, each running variance the average of their unbiased variances.
"""
import torch
import torch.nn as nn

from contrastive.data import DataError

RULE = ("BatchNorm running statistics reset, then re-estimated as the cumulative average (momentum None) "
        "over fixed consecutive batches of un-augmented training images (the first batches x batch_size), "
        "train mode, no gradient; weights untouched; then every probe in eval mode")


def batch_norms(modules):
    """Every BatchNorm layer (1-D, 2-D, 3-D) inside `modules`."""
    return [m for module in modules for m in module.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]


@torch.no_grad()
def recalibrate_bn(modules, x, batches, batch_size):
    """Re-estimate the running statistics of every BatchNorm in `modules` (applied in turn: the
    output of one is the input of the next, e.g. (f, g)) from `batches` consecutive batches of
    `batch_size` images of x, cumulative average; parameters are untouched (the rule above)."""
    if batches * batch_size > len(x):
        raise DataError(f"control.bn_batches x control.bn_batch_size: {batches} batches of {batch_size} images "
                        f"need {batches * batch_size} images; the training set has {len(x)}")
    norms, modes = batch_norms(modules), [module.training for module in modules]
    momenta = [bn.momentum for bn in norms]
    for bn in norms:
        bn.reset_running_stats()
        bn.momentum = None                      # running statistic = mean over the batches seen
    device = next(modules[0].parameters()).device
    for module in modules:
        module.train()
    for i in range(batches):
        out = x[i * batch_size:(i + 1) * batch_size].to(device)
        for module in modules:
            out = module(out)
    for bn, momentum in zip(norms, momenta):
        bn.momentum = momentum
    for module, mode in zip(modules, modes):
        module.train(mode)
