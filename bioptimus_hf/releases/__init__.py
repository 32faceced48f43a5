"""Stage 3, releases: ``record`` (the typed :class:`ReleaseInfo`, the only reader and writer of
``bioptimus_phase.json`` and of release names), ``writer`` (atomic release directories), ``card`` (model
cards), ``hub`` (publishing to the Hub), ``publisher`` and ``publisher_config`` (publishing while training)."""
