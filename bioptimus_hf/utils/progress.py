"""When the library draws a progress bar (qik-find's search, the initialisation's encoding and distillation, the job
pool): as the Trainer draws its own, on the main process only, and not with ``--disable_tqdm`` (``enabled``) nor
with Hugging Face's progress bars switched off (``HF_HUB_DISABLE_PROGRESS_BARS=1``, ``disable_progress_bars()``).
"""

from __future__ import annotations

from typing import Iterable

from huggingface_hub.utils import are_progress_bars_disabled
from tqdm.auto import tqdm


def progress_enabled(enabled: bool = True) -> bool:
    """Whether a bar is drawn here: ``enabled``, Hugging Face's progress bars on, and the main process."""
    if not enabled or are_progress_bars_disabled():
        return False
    # Imported here: qik-find's module loads without torch (bioptimus_hf/utils/__init__.py).
    from .distributed import is_main_process

    return is_main_process()


def progress_bar(iterable: Iterable | None = None, *, enabled: bool = True, **kwargs) -> tqdm:
    """A ``tqdm`` bar (``tqdm.auto``: a widget in notebooks) that draws nothing unless :func:`progress_enabled`."""
    return tqdm(iterable, disable=not progress_enabled(enabled), **kwargs)
