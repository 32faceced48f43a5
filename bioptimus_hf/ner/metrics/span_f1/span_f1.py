"""Entity-level (span) precision, recall and F1 of NER tags in any scheme, as an ``evaluate`` module: the scoring of
``bioptimus ner`` (:func:`bioptimus_hf.ner.evaluation.score_tags`), so the numbers are the project's.

    import evaluate
    from bioptimus_hf.ner.evaluation import SPAN_F1
    span_f1 = evaluate.load(SPAN_F1)   # a local directory: no network
    span_f1.compute(predictions=[["B-Disease", "L-Disease", "O"]], references=[["B-Disease", "I-Disease", "O"]],
                    scheme="BIOUL", reference_scheme="BIO")
"""

import datasets
import evaluate

from bioptimus_hf.ner.evaluation import score_tags


_DESCRIPTION = """Entity-level micro precision, recall and F1 of tagged sentences: predicted and reference tags
are decoded into entity spans in their own tagging scheme (IO, BIO/IOB2, BIOUL or IOBES; a tag that cannot
continue the open entity starts a new one), and a predicted entity counts only where type, start and end all
match a reference entity (seqeval on IOB2 written from the spans). Scores are comparable across schemes."""

_KWARGS_DESCRIPTION = """
Args:
    predictions: one list of tags per sentence.
    references: one list of tags per sentence, as long as its prediction.
    scheme: the predictions' tagging scheme, "IO", "BIO" (default), "BIOUL" or "IOBES".
    reference_scheme: the references' scheme (default: ``scheme``).
Returns:
    precision, recall, f1 (fractions; 0.0 where undefined), gold_entities, predicted_entities.
"""

_CITATION = """@misc{seqeval, title={{seqeval}: A Python framework for sequence labeling evaluation},
  url={https://github.com/chakki-works/seqeval}, author={Hiroki Nakayama}, year={2018}}"""


class SpanF1(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {
                    "predictions": datasets.Sequence(datasets.Value("string")),
                    "references": datasets.Sequence(datasets.Value("string")),
                }
            ),
        )

    def _compute(self, predictions, references, scheme="BIO", reference_scheme=None):
        return score_tags(predictions, references, scheme, reference_scheme)
