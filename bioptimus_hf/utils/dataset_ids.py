"""Hub dataset ids written into model-card metadata (``datasets:`` and the ``model-index``): only ids a user can load
with current ``datasets``. ``datasets`` 4 removed loading scripts, so a repository that is only a ``<name>.py`` script
(all of ``bigbio/*``, BLURB's usual home) is refused, with the way out: a parquet copy's id, or no id.
"""

from __future__ import annotations

from huggingface_hub.utils import HFValidationError, validate_repo_id


# Namespaces whose datasets are loading scripts only (none of their repositories has data files).
SCRIPT_ONLY_DATASET_NAMESPACES = ("bigbio",)


def check_dataset_id(dataset_id: str, where: str) -> str:
    """Return ``dataset_id`` if it is a valid Hub id outside the script-only namespaces; else ValueError."""
    try:
        validate_repo_id(dataset_id)
    except HFValidationError as error:
        raise ValueError(f"{where}: {dataset_id!r} is not a Hub dataset id ({error})") from None
    namespace = dataset_id.split("/")[0] if "/" in dataset_id else None
    if namespace in SCRIPT_ONLY_DATASET_NAMESPACES:
        raise ValueError(
            f"{where}: {dataset_id!r} is a loading-script dataset, which datasets >= 4 cannot load "
            "('Dataset scripts are no longer supported'); give the id of a copy that loads (parquet), or no "
            "dataset id: the card names the data in prose"
        )
    return dataset_id
