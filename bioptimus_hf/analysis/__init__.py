"""Measures of pre-trained models: each curriculum phase's task difficulty (paper Figure 4); token frequencies,
isotropy, representations and projections of rare and frequent tokens (paper Figure 5), applied to a study's
releases by :mod:`bioptimus_hf.study.analysis`."""
