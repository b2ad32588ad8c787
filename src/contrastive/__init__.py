"""Contrastive representation learning, the algorithms only: importable without the study around them.

Modules: data (datasets: generated and read from disk), augment (batched view sampling), models
(encoders and heads), losses, methods (one training step each, in the papers' symbols), train (the
shared loop), evaluate (probes on frozen features), distributed (torch.distributed helpers).
The study that runs and judges them lives in the `replication` package.
"""
