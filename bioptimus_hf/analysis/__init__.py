"""Analysis of pre-trained models: how hard each curriculum phase's task is (``task_difficulty``, paper
Figure 4) and how rare and frequent tokens are represented (``frequency`` buckets from a corpus,
``isotropy`` measures, ``representations`` extracted from a model, ``projection`` plots; paper Figure 5),
tabulated by ``report``; :mod:`bioptimus_hf.study.analysis` applies them to a study's releases."""
