"""``RowOrderTrainer``: the transformers ``Trainer`` whose evaluation and prediction keep the dataset's row order.

With ``train_sampling_strategy="group_by_length"`` transformers also hands evaluation a
``LengthGroupedSampler``, which reorders rows at random while ``predict`` returns predictions in that
order with nothing to undo it, so predictions no longer line up with the rows they belong to (NER's windows,
HoC's sentences of one document). Length grouping at evaluation is done instead by sorting the evaluation rows
once (``encode_split(..., sort_by_length=True)``); this Trainer reads them sequentially.

The same sampler serves several processes (``torchrun``): ``accelerate`` deals the sequential batches out
to the ranks and ``gather_for_metrics`` puts them back in dataset order, dropping the rows repeated to even
out the last batch. Under ``torchrun`` with length grouping the stock sampler misaligned every prediction
(test F1 0.09 instead of 1.0 on the tests' tiny data).
"""

from __future__ import annotations

from torch.utils.data import SequentialSampler
from transformers import Trainer


class RowOrderTrainer(Trainer):
    def _get_eval_sampler(self, eval_dataset):
        if eval_dataset is None:
            return None
        return SequentialSampler(eval_dataset)
