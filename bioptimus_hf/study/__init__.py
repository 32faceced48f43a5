"""The paper's study (``bioptimus study``): ``study_config`` (arms under one token budget), ``runner`` (the units in
order, resumable), ``analysis``, ``results``, ``figures``, and ``run`` (the whole study, :func:`~.run.run_study`)."""
