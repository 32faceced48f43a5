"""Stage 3, releases: ``record`` (the typed :class:`ReleaseInfo`, the only reader and writer of
``bioptimus_phase.json``), ``naming`` (release directory, branch, tag and repository names), ``lineage`` (Hub ids,
public names, the base model only when known), ``checkpoint_facts`` (what a release's files say of its model),
``writer`` (atomic release directories), ``card`` with ``card_context`` (model cards, a template per kind), ``hub``
with ``publish_config`` (publishing to the Hub), ``publisher`` and ``release_config`` (publishing while training)."""
