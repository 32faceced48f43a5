"""``NerTrainer``: the transformers ``Trainer`` with evaluation that keeps the dataset's row order.

With ``train_sampling_strategy="group_by_length"`` transformers also hands evaluation a
``LengthGroupedSampler``, which reorders rows at random while ``predict`` returns predictions in that
order with nothing to undo it, so predictions no longer line up with the windows they belong to.
Length grouping at evaluation is done instead by sorting the evaluation windows once
(``encode_split(..., sort_by_length=True)``); this Trainer reads them sequentially.
"""

from __future__ import annotations

from torch.utils.data import SequentialSampler
from transformers import Trainer


class NerTrainer(Trainer):
    def _get_eval_sampler(self, eval_dataset):
        if eval_dataset is None or self.args.world_size > 1:
            return super()._get_eval_sampler(eval_dataset)
        return SequentialSampler(eval_dataset)
