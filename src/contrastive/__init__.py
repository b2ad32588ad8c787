"""A replication study of contrastive representation learning, in miniature on a CPU.

Modules: data (datasets and their manifests), augment (batched view sampling), models (encoders
and heads), losses, methods (one training step each), train (the shared loop), evaluate (probes
on frozen features), stats (intervals and verdicts), config (the params.yaml schema), io.
"""
