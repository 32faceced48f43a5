"""The corpus wing: NLM's PubMed XML files turned into a prepared corpus that every stage reads (stage 0).

:mod:`~bioptimus_hf.corpus.pubmed_xml` reads one file as a stream of citations and deletions;
:mod:`~bioptimus_hf.corpus.prepare` applies the files in name order, filters and writes the shards and manifest
(:mod:`bioptimus_hf.utils.prepared_corpus` owns their layout); :mod:`~bioptimus_hf.corpus.prepare_config` its flags.
"""
