"""``RowOrderTrainer``: the transformers ``Trainer`` whose evaluation and prediction keep the dataset's row order.

With ``group_by_length`` transformers also hands evaluation a ``LengthGroupedSampler``, so predictions no longer
line up with their rows (NER's windows, HoC's documents). The evaluation rows are sorted by length once instead
(``encode_split(..., sort_by_length=True)``) and read in order. The FLOP estimate counts the parameters once, not
at every step (benchmarks/finetune_step.py). Under gradient accumulation each pass's loss is divided by the passes.
"""

from __future__ import annotations

from torch.utils.data import SequentialSampler
from transformers import Trainer


def average_accumulated_losses(trainer: Trainer) -> None:
    """Under gradient accumulation, ``trainer`` divides each pass's loss by the passes. The task heads' losses are
    means that ignore ``num_items_in_batch`` (transformers' sequence and token classification): handed it, the
    Trainer would sum the passes' means instead."""
    if trainer.args.gradient_accumulation_steps > 1:
        trainer.model_accepts_loss_kwargs = False


class RowOrderTrainer(Trainer):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        average_accumulated_losses(self)

    def _get_eval_sampler(self, eval_dataset):
        if eval_dataset is None:
            return None
        return SequentialSampler(eval_dataset)

    def floating_point_ops(self, inputs) -> int:
        """The Trainer's estimate with the model's non-embedding parameter count taken once per model."""
        main_input = getattr(self.model, "main_input_name", "input_ids")
        if main_input not in inputs or not hasattr(self.model, "num_parameters"):
            return super().floating_point_ops(inputs)
        counted = getattr(self, "_counted_parameters", None)
        if counted is None or counted[0] is not self.model:
            counted = self._counted_parameters = (self.model, self.model.num_parameters(exclude_embeddings=True))
        return 6 * inputs[main_input].numel() * counted[1]
