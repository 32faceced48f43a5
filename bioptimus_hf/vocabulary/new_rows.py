"""What a strategy that lives in a module of its own (mean_cov, token_distillation, focus) returns: the rows of the
new tokens (:class:`NewRows`); rows it leaves out fall back to `averaged`. Which module computes them:
:mod:`bioptimus_hf.vocabulary.row_initializers`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch


@dataclass
class NewRows:
    """Rows of new tokens, by new-vocabulary id; `output`/`bias` None = the `averaged` output rows and bias."""

    input: dict[int, torch.Tensor]
    output: dict[int, torch.Tensor] | None = None
    bias: dict[int, float] | None = None
    report: dict[str, Any] = field(default_factory=dict)
