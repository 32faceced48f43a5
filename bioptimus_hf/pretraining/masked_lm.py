"""Masked-only prediction: a masked LM's own MLM head run on the labelled positions only.

A masked LM (``BertForMaskedLM``, ``RobertaForMaskedLM``, ``DistilBertForMaskedLM``...) applies its MLM head
(a transform, then a projection onto the whole vocabulary) to *every* position, although only the ~15-20% of
positions with a label (``labels != -100``) enter the loss. For a small model the vocabulary projection of the
unlabelled positions is a large share of a training step's arithmetic (and of its activation memory: a
``batch x seq_len x vocab_size`` logits tensor and its gradient).

:func:`enable_masked_only_prediction` makes such a model run its base encoder, gather the encoder outputs at
the labelled positions, and apply the *same* head modules (same parameters, tied weights intact) to those rows
only. The loss is transformers' ``ForMaskedLMLoss`` on those rows, so it equals the standard head's up to float
rounding (tests: loss and every parameter's gradient, per architecture).

How the head is found: one mechanism, read off the model's own forward
-----------------------------------------------------------------------
Every ``*ForMaskedLM`` in transformers has the same shape: ``logits = head(encoder(...)[0])``, where the
encoder is the model's base model (``model.base_model``, the child named by ``base_model_prefix``) and the
head is a *chain of the model's other direct children*, each applied to the previous one's output. What
differs is only which children form the chain::

    BERT, DeBERTa-v2 (legacy head)   cls
    RoBERTa, XLM-RoBERTa             lm_head
    ELECTRA (the generator)          generator_predictions -> generator_lm_head
    DistilBERT                       vocab_transform -> activation -> vocab_layer_norm -> vocab_projector
    ModernBERT                       head -> decoder
    DeBERTa-v2 (legacy=False)        lm_predictions(hidden, <deberta.embeddings.word_embeddings>)

Instead of a table of those names (which would need an entry, and a review, for every new class or
subclass), :func:`masked_lm_plan` *observes* the chain: it runs the class's own ``forward`` once on a dummy
batch (2 x 8 tokens, eval mode, no gradient) with hooks on the direct children, and records the calls made
at the top level of that forward. The result, a :class:`MaskedLMHeadPlan`, is data (the encoder's name and,
per head step, the child's name, which argument carried the hidden states and the other arguments, replayed
by reference), not code; the patched forward replays it on the gathered rows. The recording is accepted only
when it *proves* the premise, else the model is refused and keeps its standard head:

* the model is a masked LM (a ``*ForMaskedLM`` class among its classes: transformers' own way of giving a class
  the masked-LM loss), so a causal LM with the same ``transformer -> lm_head`` chain is not taken; its forward
  names ``labels``;
* the base model is called once, before any other child, and every later top-level call takes the previous
  call's output object (``is``, not equality) and the last one's output *is* the returned logits: nothing
  happens between the encoder and the logits but these modules. Other arguments must be modules, parameters
  or constants (DeBERTa-v2's word-embedding module); a data tensor there is refused;
* replaying the plan on a few gathered rows gives the standard logits at those rows (the head is a function of
  each position alone), and with labels the standard forward's loss *and its gradient with respect to the
  encoder output* equal those of ``ForMaskedLMLoss`` on the replayed rows (the class computes nothing else from
  the labels, e.g. no label smoothing in an overridden ``forward``; the gradient is compared because at
  initialisation the logits are nearly uniform and such losses have the same value). All within 1e-3 relative:
  a missing bias or a different loss changes them by far more.

ModernBERT publishes the same optimisation as ``config.sparse_prediction``: its forward then gathers the
labelled rows (``labels != sparse_pred_ignore_index``) with boolean indexing and applies ``head`` and
``decoder`` to them, with ``ForMaskedLMLoss``: exactly what this module does (tested: equal loss, logits and
gradients). The plan runs the same modules on the same rows, so the published path is used *in substance*,
but through the one mechanism, for two reasons: turning it on means changing ``config.sparse_prediction``,
which ``save_pretrained`` would write into the released checkpoint (whose users then get 1-D logits from a
plain ``model(**batch)``), and its boolean gather has a data-dependent size, which the static-shape path
(``masked_positions``, below) exists to remove for ``torch.compile``. A model loaded with
``sparse_prediction=True`` traces the same (the trace runs without labels) and is served the same way.

Behaviour of the patched ``forward``
------------------------------------
* ``labels`` given: the loss is transformers' ``ForMaskedLMLoss`` (``LOSS_MAPPING["ForMaskedLM"]``, the
  ``loss_function`` of its masked LMs) over labelled positions: without ``num_items_in_batch`` the mean over labelled
  positions (what the standard heads return); with ``num_items_in_batch`` (passed by the ``Trainer`` to models
  that accept loss kwargs) the *sum* divided by it. The ``Trainer`` then treats the loss as normalised over
  the accumulated batch and does not divide it by ``gradient_accumulation_steps``. (Most standard heads accept
  ``**kwargs`` but ignore ``num_items_in_batch`` and return a per-micro-batch mean, so under gradient
  accumulation their gradient is ``gradient_accumulation_steps`` times the mean's gradient; with one
  micro-batch per step both are identical. ModernBERT's honours it.)
  ``logits`` in the returned :class:`~transformers.modeling_outputs.MaskedLMOutput` hold the scores of the
  labelled positions only, shape ``(num_labelled, vocab_size)``, in the row-major order of
  ``labels != -100`` (so they align with ``labels[labels != -100]``). Code that needs full-shape logits
  together with labels calls :func:`disable_masked_only_prediction` first.
* ``masked_positions`` given too (a 1-D tensor of flat indices into ``batch x seq_len``, ascending, padded
  with ``-1`` to a fixed length; :mod:`bioptimus_hf.pretraining.static_shapes` builds it in the collator):
  the rows are gathered at those indices instead, so every tensor after the encoder has a size that does not
  depend on the batch's labels (``torch.compile`` compiles once; no host synchronisation). Padding rows get
  the target ``-100``: they add nothing to the loss or the gradients. ``logits`` then have one row per entry
  of ``masked_positions`` (padding rows included). The indices must cover every labelled position; the
  collator guarantees it.
* ``labels`` absent (inference, fill-mask, embeddings): the standard forward runs unchanged and returns logits
  for every position -- there is nothing to restrict to.

The model stays the same object and an instance of its class: nothing in its state dict, config or
``config.architectures`` changes, so ``save_pretrained`` writes a standard checkpoint of its class that loads
with ``AutoModelForMaskedLM.from_pretrained`` without this module.
"""

from __future__ import annotations

import inspect
import types
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from transformers.loss.loss_utils import ForMaskedLMLoss
from transformers.modeling_outputs import MaskedLMOutput
from transformers.utils import logging
from transformers.utils.generic import can_return_tuple


logger = logging.get_logger(__name__)

# transformers' label value for "no prediction here" (CrossEntropyLoss's default ignore_index).
IGNORE_INDEX = -100
# The value that pads `masked_positions` to its fixed length.
PADDING_POSITION = -1

_ENABLED_FLAG = "_bioptimus_masked_only_prediction"
_PLAN_ATTRIBUTE = "_bioptimus_masked_lm_plan"

# The dummy batch of the trace: small, and token ids that exist in any vocabulary of the tests' size or more.
_TRACE_BATCH, _TRACE_LENGTH = 2, 8
# Relative agreement required between the replayed plan and the standard forward on the dummy batch. Both run
# the same modules on the same rows, so they differ by float rounding only (1e-7 in float32, 1e-3 in bf16);
# what the check guards against (another loss, a head mixing positions) differs by far more.
_TRACE_TOLERANCE = {torch.float16: 2e-2, torch.bfloat16: 2e-2}
_DEFAULT_TRACE_TOLERANCE = 1e-3


class MaskedOnlyUnsupported(ValueError):
    """Raised by :func:`masked_lm_plan` for a model whose head cannot be restricted exactly; says why."""


@dataclass(frozen=True)
class Reference:
    """An argument a head step received besides the hidden states, replayed by reference: a submodule or a
    parameter of the model (``kind`` ``"module"``/``"parameter"``, ``value`` its qualified name, resolved at
    call time so that replaced or re-tied modules are followed), or a constant (``kind`` ``"constant"``)."""

    kind: str
    value: Any

    def resolve(self, model: nn.Module):
        if self.kind == "module":
            return model.get_submodule(self.value) if self.value else model
        if self.kind == "parameter":
            return model.get_parameter(self.value)
        return self.value


@dataclass(frozen=True)
class HeadStep:
    """One call of the head chain: ``getattr(model, module)(...)`` with the previous output placed at
    ``data_position`` (an index into the positional arguments) or ``data_keyword``."""

    module: str
    args: tuple[Reference, ...]
    kwargs: tuple[tuple[str, Reference], ...]
    data_position: int | None = 0
    data_keyword: str | None = None

    def __call__(self, model: nn.Module, hidden: torch.Tensor) -> torch.Tensor:
        args = [ref.resolve(model) for ref in self.args]
        kwargs = {name: ref.resolve(model) for name, ref in self.kwargs}
        if self.data_keyword is not None:
            kwargs[self.data_keyword] = hidden
        else:
            args.insert(self.data_position, hidden)
        return getattr(model, self.module)(*args, **kwargs)


@dataclass(frozen=True)
class MaskedLMHeadPlan:
    """Where a masked LM's encoder and MLM head are, as observed by :func:`masked_lm_plan`.

    ``encoder``: the name of the base-model child; ``head``: the calls that turn its first output into the
    logits; ``forward_parameters``: the class forward's parameter names in order (to name positional
    arguments). ``describe()`` gives a one-line summary for logs."""

    encoder: str
    head: tuple[HeadStep, ...]
    forward_parameters: tuple[str, ...]

    def apply_head(self, model: nn.Module, hidden: torch.Tensor) -> torch.Tensor:
        for step in self.head:
            hidden = step(model, hidden)
        return hidden

    def describe(self) -> str:
        def step_text(step: HeadStep) -> str:
            extra = [f"<{ref.value}>" if ref.kind != "constant" else repr(ref.value) for ref in step.args]
            extra += [f"{name}=<{ref.value}>" for name, ref in step.kwargs]
            return step.module + (f"(..., {', '.join(extra)})" if extra else "")

        return f"encoder `{self.encoder}`, head {' -> '.join(step_text(step) for step in self.head)}"


# ------------------------------------------------------------------------------------------ the trace
def _trace_tolerance(model: nn.Module) -> float:
    dtype = next((p.dtype for p in model.parameters() if p.is_floating_point()), torch.float32)
    return _TRACE_TOLERANCE.get(dtype, _DEFAULT_TRACE_TOLERANCE)


def _relative_difference(actual: torch.Tensor, expected: torch.Tensor) -> float:
    actual, expected = actual.detach().double(), expected.detach().double()
    return float((actual - expected).norm() / expected.norm().clamp(min=1e-30))


def _dummy_batch(model: nn.Module) -> tuple[dict, torch.Tensor, torch.Tensor]:
    """Inputs (no labels), labels at a few positions, and those positions' flat indices."""
    device = next(model.parameters()).device
    vocab_size = int(model.config.vocab_size)
    generator = torch.Generator().manual_seed(0)
    # Ids above the usual special tokens (0-4 in BERT, RoBERTa, DeBERTa vocabularies) when the vocabulary allows.
    low = min(5, vocab_size - 1)
    input_ids = torch.randint(low, vocab_size, (_TRACE_BATCH, _TRACE_LENGTH), generator=generator)
    positions = torch.tensor([1, 4, _TRACE_LENGTH + 2, _TRACE_LENGTH + 6])
    labels = torch.full((_TRACE_BATCH * _TRACE_LENGTH,), IGNORE_INDEX, dtype=torch.long)
    labels[positions] = torch.randint(low, vocab_size, (len(positions),), generator=generator)
    inputs = {"input_ids": input_ids.to(device), "attention_mask": torch.ones_like(input_ids).to(device)}
    return inputs, labels.view(_TRACE_BATCH, _TRACE_LENGTH).to(device), positions.to(device)


def _reference_to(value, model: nn.Module, names: dict[int, tuple[str, str]]) -> Reference:
    if isinstance(value, (nn.Module, nn.Parameter)):
        found = names.get(id(value))
        if found is None:
            raise MaskedOnlyUnsupported(
                f"a head module received a {type(value).__name__} that is not part of the model"
            )
        return Reference(*found)
    if torch.is_tensor(value):
        raise MaskedOnlyUnsupported("a head module received a tensor besides the hidden states (data-dependent input)")
    if value is None or isinstance(value, (bool, int, float, str)):
        return Reference("constant", value)
    raise MaskedOnlyUnsupported(f"a head module received an argument of type {type(value).__name__}")


def _record_top_level_calls(model: nn.Module, run) -> list[tuple[str, tuple, dict, Any]]:
    """Run ``run()`` with hooks on ``model``'s direct children; return the calls made by the forward itself
    (a child called from inside another child is that child's business), in the order they started."""
    calls: list[list] = []
    active = [0]
    handles = []

    def before(name):
        def hook(module, args, kwargs):
            if active[0] == 0:
                calls.append([name, args, kwargs, None])
                active.append(len(calls) - 1)
            else:
                active.append(None)
            active[0] += 1

        return hook

    def after(module, args, kwargs, output):
        active[0] -= 1
        index = active.pop()
        if index is not None:
            calls[index][3] = output

    try:
        for name, child in model.named_children():
            handles.append(child.register_forward_pre_hook(before(name), with_kwargs=True))
            handles.append(child.register_forward_hook(after, with_kwargs=True))
        run()
    finally:
        for handle in handles:
            handle.remove()
    return [tuple(call) for call in calls]


def _trace(model: nn.Module) -> MaskedLMHeadPlan:
    encoder_name, forward, parameters = _traced_forward(model)
    inputs, labels, positions = _dummy_batch(model)
    standard: dict[str, Any] = {}

    def run_without_labels():
        standard["plain"] = forward(model, **inputs, return_dict=True)

    calls = _record_top_level_calls(model, run_without_labels)
    logits = standard["plain"].logits
    if not calls or calls[0][0] != encoder_name:
        raise MaskedOnlyUnsupported(f"its forward calls {calls[0][0] if calls else 'nothing'} before the base model")
    hidden = calls[0][3][0]
    steps = _head_steps(model, calls, encoder_name, hidden, logits)
    plan = MaskedLMHeadPlan(encoder=encoder_name, head=tuple(steps), forward_parameters=parameters)
    _check_premise(model, plan, forward, (inputs, labels, positions), hidden, logits)
    return plan


def _traced_forward(model: nn.Module) -> tuple[str, Any, tuple[str, ...]]:
    """The base model's name, the class's forward and its named parameters (without self); refused for a model
    that is no masked LM, whose base model is not a direct submodule, or whose forward takes no ``labels``."""
    if not any("ForMaskedLM" in cls.__name__ for cls in type(model).__mro__):
        raise MaskedOnlyUnsupported("it is not a masked LM (no *ForMaskedLM class among its classes)")
    encoder_name = getattr(model, "base_model_prefix", "")
    children = dict(model.named_children())
    if not encoder_name or encoder_name not in children:
        raise MaskedOnlyUnsupported(f"its base model `{encoder_name}` is not one of its direct submodules")
    forward = type(model).forward
    parameters = tuple(
        name
        for name, p in inspect.signature(forward).parameters.items()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    )[1:]  # without self
    if "labels" not in parameters:
        raise MaskedOnlyUnsupported("its forward does not name a `labels` parameter")
    return encoder_name, forward, parameters


def _head_steps(model: nn.Module, calls: list, encoder_name: str, hidden: torch.Tensor, logits: torch.Tensor):
    """The head as the chain of top-level modules the forward calls after the base model, each on the previous
    one's output; refused when anything is computed between them or the chain does not end in the logits."""
    names: dict[int, tuple[str, str]] = {}
    for name, parameter in model.named_parameters(remove_duplicate=False):
        names.setdefault(id(parameter), ("parameter", name))
    for name, module in model.named_modules(remove_duplicate=False):
        names.setdefault(id(module), ("module", name))

    steps, previous = [], hidden
    for name, args, kwargs, output in calls[1:]:
        if name == encoder_name:
            raise MaskedOnlyUnsupported("its forward calls the base model more than once")
        data_slots = [i for i, a in enumerate(args) if a is previous] + [k for k, v in kwargs.items() if v is previous]
        if len(data_slots) != 1:
            raise MaskedOnlyUnsupported(
                f"`{name}` does not take the previous output ({'encoder' if previous is hidden else 'head'}) as "
                "is: the forward computes something between them"
            )
        slot = data_slots[0]
        steps.append(
            HeadStep(
                module=name,
                args=tuple(_reference_to(a, model, names) for i, a in enumerate(args) if slot != i),
                kwargs=tuple((k, _reference_to(v, model, names)) for k, v in kwargs.items() if slot != k),
                data_position=slot if isinstance(slot, int) else None,
                data_keyword=slot if isinstance(slot, str) else None,
            )
        )
        previous = output
    if not steps or previous is not logits:
        raise MaskedOnlyUnsupported(
            "its logits are not the output of a chain of its modules applied to the encoder output"
        )
    return steps


def _check_premise(
    model: nn.Module, plan: MaskedLMHeadPlan, forward: Any, batch: tuple, hidden: torch.Tensor, logits: torch.Tensor
) -> None:
    """The premise, checked: the head is position-wise, and the class's loss is ForMaskedLMLoss on those rows."""
    inputs, labels, positions = batch
    tolerance = _trace_tolerance(model)
    rows = plan.apply_head(model, hidden.reshape(-1, hidden.shape[-1]).index_select(0, positions))
    expected_rows = logits.reshape(-1, logits.shape[-1]).index_select(0, positions)
    if rows.shape != expected_rows.shape or _relative_difference(rows, expected_rows) > tolerance:
        raise MaskedOnlyUnsupported("its head applied to some positions alone does not give the standard logits there")
    # The loss and its gradient with respect to the encoder output: at initialisation the logits are nearly
    # uniform and a different loss (label smoothing, a temperature) can have the same value, not the same gradient.
    with torch.enable_grad():
        expected_loss, expected_gradient = _standard_loss_and_encoder_gradient(model, forward, inputs, labels)
        leaf = hidden.detach().requires_grad_(True)
        rows = plan.apply_head(model, leaf.reshape(-1, leaf.shape[-1]).index_select(0, positions))
        loss = ForMaskedLMLoss(rows, labels.reshape(-1).index_select(0, positions), vocab_size=rows.shape[-1])
        (gradient,) = torch.autograd.grad(loss, leaf)
    if (
        expected_loss is None
        or _relative_difference(loss, expected_loss) > tolerance
        or _relative_difference(gradient, expected_gradient) > tolerance
    ):
        raise MaskedOnlyUnsupported("its loss is not the cross-entropy of the labelled positions (ForMaskedLMLoss)")


def _standard_loss_and_encoder_gradient(model, forward, inputs, labels):
    """The standard forward's loss with labels, and its gradient with respect to the encoder's output (made a
    leaf by a hook on the encoder)."""
    leaves = []

    def make_leaf(module, args, output):
        leaf = output[0].detach().requires_grad_(True)
        leaves.append(leaf)
        if isinstance(output, tuple):
            return (leaf, *output[1:])
        output[next(iter(output.keys()))] = leaf
        return output

    handle = getattr(model, model.base_model_prefix).register_forward_hook(make_leaf)
    try:
        loss = forward(model, **inputs, labels=labels, return_dict=True).loss
    finally:
        handle.remove()
    if loss is None or len(leaves) != 1:
        return None, None
    (gradient,) = torch.autograd.grad(loss, leaves[0])
    return loss, gradient


def masked_lm_plan(model: nn.Module) -> MaskedLMHeadPlan:
    """The encoder and head of ``model`` as observed on its own forward (see the module docstring); cached on
    the model. Raises :class:`MaskedOnlyUnsupported` (with the reason) for a model that cannot be served."""
    plan = model.__dict__.get(_PLAN_ATTRIBUTE)
    if plan is not None:
        return plan
    was_training = model.training
    try:
        model.eval()
        with torch.no_grad():
            plan = _trace(model)
    except MaskedOnlyUnsupported:
        raise
    except Exception as error:  # the model could not even run the dummy batch the standard way
        raise MaskedOnlyUnsupported(
            f"its forward failed on a dummy batch ({type(error).__name__}: {error})"
        ) from error
    finally:
        model.train(was_training)
    # A plain attribute (not a submodule): not in the state dict; copy.deepcopy copies it with the model.
    model.__dict__[_PLAN_ATTRIBUTE] = plan
    return plan


def unsupported_reason(model: nn.Module) -> str | None:
    """Why :func:`enable_masked_only_prediction` would refuse ``model`` (None when it is served)."""
    try:
        masked_lm_plan(model)
    except MaskedOnlyUnsupported as error:
        return str(error)
    return None


def supports_masked_only_prediction(model: nn.Module) -> bool:
    """Whether :func:`enable_masked_only_prediction` is exact for ``model``: its head was found and checked on its
    own forward (see the module docstring; this runs that forward once on a 2 x 8 dummy batch, then caches)."""
    return unsupported_reason(model) is None


def is_masked_only_prediction_enabled(model: nn.Module) -> bool:
    """Whether :func:`enable_masked_only_prediction` is active on ``model``."""
    return bool(getattr(model, _ENABLED_FLAG, False))


# ------------------------------------------------------------------------------------------ the forward
def gather_labelled_rows(
    hidden: torch.Tensor, labels: torch.Tensor, masked_positions: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """The encoder rows to predict and their targets, flattened over ``batch x seq_len``.

    Without ``masked_positions``: the labelled rows (boolean indexing, row-major order; the size depends on the
    labels). With it: the rows at those flat indices, ``PADDING_POSITION`` entries giving row 0 with the
    target ``IGNORE_INDEX`` (a fixed size, no host synchronisation)."""
    flat_hidden = hidden.reshape(-1, hidden.shape[-1])
    flat_labels = labels.to(hidden.device).reshape(-1)
    if masked_positions is None:
        labelled = flat_labels != IGNORE_INDEX
        return flat_hidden[labelled], flat_labels[labelled]
    positions = masked_positions.to(hidden.device).reshape(-1)
    index = positions.clamp(min=0)
    targets = flat_labels.index_select(0, index).masked_fill(positions < 0, IGNORE_INDEX)
    return flat_hidden.index_select(0, index), targets


@can_return_tuple
def _masked_lm_output(
    self, plan: MaskedLMHeadPlan, labels, masked_positions=None, num_items_in_batch=None, **encoder_inputs
) -> MaskedLMOutput:
    outputs = getattr(self, plan.encoder)(**encoder_inputs, return_dict=True)
    rows, targets = gather_labelled_rows(outputs[0], labels, masked_positions)
    prediction_scores = plan.apply_head(self, rows)
    # transformers' masked-LM loss (float32 upcast, -100 ignored, mean or sum / num_items_in_batch).
    loss = ForMaskedLMLoss(
        prediction_scores, targets, vocab_size=prediction_scores.shape[-1], num_items_in_batch=num_items_in_batch
    )
    return MaskedLMOutput(
        loss=loss,
        logits=prediction_scores,
        hidden_states=getattr(outputs, "hidden_states", None),
        attentions=getattr(outputs, "attentions", None),
    )


def _masked_only_forward(self, *args, **kwargs) -> MaskedLMOutput:
    """The patched forward: arguments as the class's forward takes them, plus ``masked_positions`` and loss
    kwargs. Also called directly (with keywords) by :mod:`bioptimus_hf.distillation.student`."""
    plan = masked_lm_plan(self)
    arguments = dict(zip(plan.forward_parameters, args))
    arguments.update(kwargs)
    labels = arguments.pop("labels", None)
    masked_positions = arguments.pop("masked_positions", None)
    if labels is None:
        arguments.pop("num_items_in_batch", None)
        return type(self).forward(self, **arguments)
    return _masked_lm_output(self, plan, labels, masked_positions, **arguments)


def _forward_signature(model: nn.Module) -> inspect.Signature:
    """The class forward's signature with ``masked_positions`` and ``**kwargs``: the ``Trainer`` reads it to keep
    dataset columns and (through ``**kwargs``) to pass ``num_items_in_batch``."""
    signature = inspect.signature(type(model).forward)
    parameters = [p for p in signature.parameters.values() if p.kind != p.VAR_KEYWORD]
    if "masked_positions" not in signature.parameters:
        parameters.append(inspect.Parameter("masked_positions", inspect.Parameter.KEYWORD_ONLY, default=None))
    parameters.append(inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD))
    return signature.replace(parameters=parameters)


def enable_masked_only_prediction(model: nn.Module) -> nn.Module:
    """Restrict ``model``'s MLM head to labelled positions when labels are given; return ``model``.

    The same object is returned, still an instance of its own class, with unchanged parameters, buffers, tied
    weights and config (``save_pretrained`` output is a standard checkpoint). Models for which
    :func:`supports_masked_only_prediction` is False are returned unchanged, with a logged warning saying why,
    and keep the standard (full-vocabulary, every-position) head. Calling it twice is harmless.
    """
    if is_masked_only_prediction_enabled(model):
        return model
    reason = unsupported_reason(model)
    if reason is not None:
        logger.warning(
            f"Masked-only prediction cannot serve {type(model).__name__}: {reason}. It keeps the standard "
            "masked-LM head (logits at every position)."
        )
        return model

    def forward(self, *args, **kwargs):
        return _masked_only_forward(self, *args, **kwargs)

    forward.__signature__ = _forward_signature(model)
    forward.__doc__ = _masked_only_forward.__doc__
    # An instance attribute shadows the class's forward for nn.Module.__call__ only on this object; the class,
    # the state dict and the config are untouched. copy.deepcopy re-binds it (and copies the plan) to the copy.
    model.forward = types.MethodType(forward, model)
    setattr(model, _ENABLED_FLAG, True)
    logger.info("masked-only prediction on for %s: %s", type(model).__name__, masked_lm_plan(model).describe())
    return model


def masked_only_status(model: nn.Module) -> str:
    """One line for run logs: whether masked-only prediction is on for ``model``, with its head, or why not."""
    name = type(model).__name__
    if is_masked_only_prediction_enabled(model):
        return f"on for {name}: {masked_lm_plan(model).describe()}"
    reason = unsupported_reason(model)
    return f"off for {name} (standard head{': ' + reason if reason else ''})"


def disable_masked_only_prediction(model: nn.Module) -> nn.Module:
    """Undo :func:`enable_masked_only_prediction` (standard forward, full logits); return ``model``."""
    if is_masked_only_prediction_enabled(model):
        del model.forward
        delattr(model, _ENABLED_FLAG)
    return model


def use_masked_only_prediction(model: nn.Module, enabled: bool, gradient_accumulation_steps: int = 1) -> bool:
    """Enable masked-only prediction when asked (and supported); warn about the standard head's loss scaling
    under gradient accumulation. Returns whether it is active."""
    if enabled:
        enable_masked_only_prediction(model)
    active = is_masked_only_prediction_enabled(model)
    if not active and gradient_accumulation_steps > 1:
        # transformers 5.23 passes num_items_in_batch to BertForMaskedLM (and most masked LMs), which ignore it,
        # and then skips dividing the loss by the accumulation steps (see docs/speed.md).
        logger.warning(
            "standard MLM head with gradient_accumulation_steps=%d: transformers does not scale this model's loss "
            "by the accumulation steps; prefer --masked_only_prediction true",
            gradient_accumulation_steps,
        )
    return active
