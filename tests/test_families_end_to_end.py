"""The whole recipe per tokenizer family (issue 33): vocabulary (bioptimus train-tokenizer) -> contextualized
initialisation -> a 2-phase curriculum (run_pretraining.py) -> releases -> from_pretrained -> NER (run_ner.py),
for a tiny WordPiece BERT, byte-level-BPE RoBERTa, byte-level-BPE ModernBERT and SentencePiece-Unigram DeBERTa
(its Unigram vocabulary trained in the test). Bases: tests/helpers/families.py."""

import json

import pytest
import torch
from transformers import AutoModelForMaskedLM, AutoTokenizer

import run_ner
import run_pretraining
from bioptimus_hf.commands import run as bioptimus
from bioptimus_hf.utils.tokenizer_families import tokenizer_family
from helpers.families import FAMILY_OF_BASE, build_base, write_corpus
from helpers.ner import quick_ner_flags, write_dataset_dir


pytestmark = pytest.mark.usefixtures("one_thread")


ARCHITECTURES = {
    "bert": "BertForMaskedLM",
    "roberta": "RobertaForMaskedLM",
    "modernbert": "ModernBertForMaskedLM",
    "deberta": "DebertaV2ForMaskedLM",
}
# Token masking with corruption, then whole words masked with the mask token only (its card names the token).
TWO_PHASES = (
    '[{version: "0.1", masking_unit: token, masking_rate: 0.15, corruption: true},'
    ' {version: "0.2", masking_unit: word, masking_rate: 0.2, corruption: false}]\n'
)
NER_FAST = quick_ner_flags(
    num_train_epochs=2, learning_rate=5e-3, per_device_train_batch_size=8, max_seq_length=24, seeds=1
)


@pytest.fixture(scope="module")
def ner_data(tmp_path_factory):
    return write_dataset_dir(str(tmp_path_factory.mktemp("ner_data")), sizes=(24, 8, 8))


@pytest.mark.parametrize("base", list(ARCHITECTURES))
def test_vocabulary_init_curriculum_release_and_ner(tmp_path, ner_data, base):
    base_dir = build_base(base, tmp_path / "base")
    corpus = write_corpus(tmp_path / "corpus.txt", lines=200)

    # 1. The vocabulary, with the base's pipeline and its family's trainer.
    tokenizer_dir = tmp_path / "tokenizer"
    report = bioptimus(
        "train-tokenizer",
        [
            "--train_files",
            str(corpus),
            "--base_tokenizer",
            str(base_dir),
            "--output_dir",
            str(tokenizer_dir),
            "--vocab_size",
            "480",
        ],
    )
    assert report["family"] == FAMILY_OF_BASE[base] and report["new_tokens"] > 0

    # 2-3. Contextualized initialisation and the 2-phase curriculum; each phase end writes a release.
    curriculum = tmp_path / "two_phases.yaml"
    curriculum.write_text(TWO_PHASES)
    out = tmp_path / "run"
    run_pretraining.main(
        [
            "--model_name_or_path",
            str(base_dir),
            "--tokenizer_name",
            str(tokenizer_dir),
            "--init_strategy",
            "contextualized",
            "--max_contexts_per_token",
            "2",
            "--curriculum",
            str(curriculum),
            "--phase_steps",
            "0.5",
            "0.5",
            "--train_file",
            str(corpus),
            "--output_dir",
            str(out),
            "--do_train",
            "--max_steps",
            "4",
            "--per_device_train_batch_size",
            "4",
            "--max_seq_length",
            "32",
            "--max_eval_samples",
            "8",
            "--logging_steps",
            "2",
            "--save_steps",
            "100",
            "--report_to",
            "none",
            "--disable_tqdm",
            "true",
            "--learning_rate",
            "1e-3",
        ]
    )
    init_report = json.loads((out / "init_report.json").read_text())
    assert init_report["counts"]["contextualized"] > 0

    # 4. The releases load with from_pretrained, as the base's architecture and the new vocabulary.
    assert sorted(p.name for p in (out / "releases").iterdir()) == ["v0.1", "v0.2"]
    release = out / "releases" / "v0.2"
    model = AutoModelForMaskedLM.from_pretrained(release).eval()
    tokenizer = AutoTokenizer.from_pretrained(release)
    assert type(model).__name__ == ARCHITECTURES[base]
    assert tokenizer.get_vocab() == AutoTokenizer.from_pretrained(tokenizer_dir).get_vocab()
    assert tokenizer_family(tokenizer).name == FAMILY_OF_BASE[base]
    info = json.loads((release / "bioptimus_phase.json").read_text())
    assert (info["masking_unit"], info["corruption"], info["run"]["init_strategy"]) == (
        "word",
        False,
        "contextualized",
    )
    card = (release / "README.md").read_text()
    assert f"100 % {tokenizer.mask_token}" in card and model.config.model_type in card
    encoded = tokenizer(f"The {tokenizer.mask_token} binds the receptor .", return_tensors="pt")
    with torch.no_grad():
        logits = model(**encoded).logits
    assert logits.shape == (1, encoded["input_ids"].shape[1], len(tokenizer)) and torch.isfinite(logits).all()

    # 5. NER from the last release.
    results = run_ner.main(
        [
            "--model_name_or_path",
            str(release),
            "--data_dir",
            ner_data,
            "--output_dir",
            str(tmp_path / "ner"),
            "--model_name",
            f"tiny-{base}",
        ]
        + NER_FAST
    )
    on_disk = json.loads((tmp_path / "ner" / "all_results.json").read_text())
    assert on_disk == json.loads(json.dumps(results))
    assert [run["seed"] for run in on_disk["per_seed"]] == [1] and 0.0 <= on_disk["test_f1"] <= 1.0


def test_a_vocabulary_of_another_family_stops_the_run_at_start_with_the_flag(tmp_path):
    """A WordPiece vocabulary under a RoBERTa base: one `error:` line naming what to change, before training."""
    base_dir = build_base("roberta", tmp_path / "roberta")
    other_dir = build_base("bert", tmp_path / "bert")
    corpus = write_corpus(tmp_path / "corpus.txt", lines=40)
    out = tmp_path / "run"
    with pytest.raises(
        SystemExit,
        match=r"^error: The new tokenizer .* is wordpiece .* but the base tokenizer .* is "
        r"byte_level_bpe .*--init_strategy scratch",
    ):
        run_pretraining.main(
            [
                "--model_name_or_path",
                str(base_dir),
                "--tokenizer_name",
                str(other_dir),
                "--init_strategy",
                "averaged",
                "--train_file",
                str(corpus),
                "--output_dir",
                str(out),
                "--do_train",
                "--max_steps",
                "10",
                "--report_to",
                "none",
            ]
        )
    assert not list(out.glob("checkpoint-*")) and not (out / "releases").exists()
