"""BLURB beyond NER, one dataset over seeds (``run``, ``bioptimus blurb-task``), and the whole benchmark, NER included
(``benchmark``, ``bioptimus blurb``): ``tasks`` (the task types), ``blurb_config`` (the flags and each dataset's
recipe), ``data``, ``metrics`` (BLURB's metric of each type), ``score`` (the BLURB score), ``jobs`` and
``search`` (the benchmark's units and grid) and ``compare`` (tables paired by seed).
"""
