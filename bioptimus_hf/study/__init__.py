"""Stage 5, the paper's study: ``study_config`` (arms under one token budget, NER and analysis settings),
``runner`` (the units in order, resumable through ``done_marks``), ``analysis`` (the releases' representations),
``results`` (results.json / results.md), ``figures`` (PNG plots) and ``run`` (the whole study, ``run_study``, as
``bioptimus study`` runs it)."""
