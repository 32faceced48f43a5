"""Model cards rendered from release directories (bioptimus_hf.releases.card), and the lineage they name."""

import dataclasses
import json
import re
import shutil

import pytest
import torch
from huggingface_hub import ModelCard, metadata_load
from huggingface_hub.repocard_data import model_index_to_eval_results
from transformers import DistilBertConfig, DistilBertForMaskedLM, RobertaConfig, RobertaForMaskedLM, RobertaTokenizer

import run_distillation
import run_ner
import run_pretraining
from bioptimus_hf.releases.card import render_release_card, validate_card
from bioptimus_hf.releases.card_context import REPO_PLACEHOLDER
from bioptimus_hf.releases.lineage import local_checkpoint_text
from bioptimus_hf.releases.ner_results import load_ner_results
from bioptimus_hf.releases.record import PHASE_FILE, DistillationFacts, ReleaseInfo, find_releases
from bioptimus_hf.testing.tiny_releases import make_release, tiny_run_args
from helpers import run_script
from helpers.pretraining import curriculum_run_flags


BC5CDR = {
    "dataset_name": "BC5CDR-chem",
    "dataset_id": "acme/blurb-bc5cdr-chem-parquet",
    "dataset_config": "bc5chem",
    "test_f1": 0.9312,
    "test_f1_std": 0.0021,
    "test_precision": 0.9204,
    "test_recall": 0.9423,
    "eval_f1": 0.9287,
    "seeds": 5,
}


@pytest.fixture(scope="module")
def release_v03(tmp_path_factory):
    return make_release(tmp_path_factory.mktemp("run") / "releases" / "v0.3", 2)


def _write(tmp_path, text):
    path = tmp_path / "README.md"
    path.write_text(text, encoding="utf-8")
    return path


def test_card_without_results_has_metadata_and_honest_sections(release_v03, tmp_path):
    text = render_release_card(release_v03, repo_id="acme/bioptimus")
    path = _write(tmp_path, text)
    metadata = metadata_load(path)
    assert metadata["license"] == "apache-2.0" and metadata["language"] == "en"
    assert metadata["base_model"] == "bert-base-uncased"
    assert metadata["pipeline_tag"] == "fill-mask" and "biomedical" in metadata["tags"]
    assert "model-index" not in metadata  # no results, no invented numbers
    card = ModelCard.load(path)
    assert card.data.eval_results is None
    validate_card(text)

    # Exactly one curriculum row is marked, and it is this version's.
    marked = [line for line in text.splitlines() if line.startswith("| **▶**")]
    assert len(marked) == 1 and "**v0.3**" in marked[0] and "0.25" in marked[0]
    assert "| 4 | 12 |" in marked[0]  # steps and cumulative steps of phase 3
    assert "Not evaluated" in text
    assert "**2.1125**" in text  # held-out MLM loss of the fixture (2.3125 - 0.2)
    assert "| Peak learning rate | 0.0001 |" in text and "| Gradient accumulation steps | 2 |" in text
    assert "`contextualized`" in text and "(15 entries)" in text
    assert "pubmed_sentences.txt" in text and "/data/corpus" not in text  # file names, not local paths
    assert "Effective batch size: 32 sequences" in text
    assert "Not for clinical decisions" in text and "English" in text
    for k in range(1, 5):
        assert f'from_pretrained("acme/bioptimus", revision="v0.{k}")' in text
    assert "Pavlova, Vera and Makhlouf, Mohammed" in text and "2023.bionlp-1.31" in text


def test_card_with_results_writes_a_parsable_model_index(release_v03, tmp_path):
    text = render_release_card(release_v03, [BC5CDR], repo_id="acme/bioptimus")
    card = validate_card(text)
    name, results = model_index_to_eval_results(metadata_load(_write(tmp_path, text))["model-index"])
    assert name == "acme/bioptimus"
    values = {r.metric_type: r.metric_value for r in results}
    assert values == {"f1": 0.9312, "precision": 0.9204, "recall": 0.9423}
    assert {r.dataset_type for r in results} == {"acme/blurb-bc5cdr-chem-parquet"} and {
        r.dataset_split for r in results
    } == {"test"}
    assert {r.task_type for r in results} == {"token-classification"}
    assert card.data.eval_results[0].dataset_config == "bc5chem"
    assert "| BC5CDR-chem | 93.12 ± 0.21 | 92.04 | 94.23 | 92.87 | 5 |" in text
    assert "Not evaluated" not in text


def test_ner_results_from_all_results_files(release_v03, tmp_path):
    ner_dir = tmp_path / "ner"
    for name, f1 in (("NCBI-disease", 0.887), ("JNLPBA", 0.795)):
        (ner_dir / name).mkdir(parents=True)
        payload = {
            "dataset": name,
            "test_f1": f1,
            "test_f1_std": 0.004,
            "test_precision": f1 - 0.01,
            "test_recall": f1 + 0.01,
            "eval_f1": f1,
            "per_seed": [{"seed": s} for s in range(3)],
        }
        (ner_dir / name / "all_results.json").write_text(json.dumps(payload))
    from_dir = load_ner_results(ner_dir)
    from_file = load_ner_results(ner_dir / "JNLPBA" / "all_results.json")
    assert [r.dataset_name for r in from_dir] == ["JNLPBA", "NCBI-disease"]
    assert from_file[0].seeds == 3 and from_file[0].test_f1 == pytest.approx(0.795)
    text = render_release_card(release_v03, ner_dir, repo_id="acme/bioptimus")
    _, results = model_index_to_eval_results(ModelCard(text).data.to_dict()["model-index"])
    f1 = {r.dataset_name: r.metric_value for r in results if r.metric_type == "f1"}
    assert f1 == {"JNLPBA": 0.795, "NCBI-disease": 0.887}
    assert "| NCBI-disease | 88.70 ± 0.40 |" in text


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"dataset_name": "X"}, "no 'test_f1'"),
        ({"test_f1": 0.9}, "needs a 'dataset_name'"),
        ({"dataset_name": "X", "test_f1": 93.1}, "fraction in \\[0, 1\\]"),
        ({"dataset_name": "X", "test_f1": 0.9, "test_recall": "high"}, "'test_recall' of 'X' must be a finite number"),
    ],
)
def test_bad_ner_results_are_rejected(bad, message):
    with pytest.raises(ValueError, match=message):
        load_ner_results([bad])


def test_bad_ner_results_file_is_named(tmp_path):
    path = tmp_path / "all_results.json"
    path.write_text(json.dumps({"dataset": "BC2GM"}))
    with pytest.raises(ValueError, match=re.escape(str(path))):
        load_ner_results(path)
    with pytest.raises(ValueError, match="given twice"):
        load_ner_results([BC5CDR, BC5CDR])


def test_missing_keys_are_tolerated(tmp_path):
    release = tmp_path / "v0.2"
    release.mkdir()
    (release / "bioptimus_phase.json").write_text(json.dumps({"version": "0.2", "run": {}}))
    text = render_release_card(release)
    validate_card(text)
    assert "BIOptimus v0.2" in text and "Not measured" in text and "not recorded" in text
    assert f'from_pretrained("{REPO_PLACEHOLDER}", revision="v0.2")' in text
    assert "base_model" not in ModelCard(text).data.to_dict()


def test_no_secrets_or_local_base_model_in_metadata(tmp_path):
    run = tiny_run_args(
        base_model="/home/me/models/bert",
        base_model_hub_id=None,
        tokenizer="/home/me/tok",
        hub_token="hf_leakyToken123",
        fp16=True,
    )
    release = make_release(tmp_path / "v0.1", 0, run=run, heldout=False)
    text = render_release_card(release)
    assert "hf_leakyToken123" not in text and "hub_token" not in text
    assert "`fp16` = yes" in text
    assert "base_model" not in ModelCard(text).data.to_dict()  # a local path is no Hub id
    assert "/home/me" not in text and "`tok`" in text  # folder names only
    assert "Base model: started from a local checkpoint, `bert`; its Hub id was not given" in text
    scratch = make_release(tmp_path / "v0.1s", 0, run=tiny_run_args(init_strategy="scratch"))
    assert "base_model" not in ModelCard(render_release_card(scratch)).data.to_dict()


def test_missing_phase_file_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="bioptimus_phase.json not found"):
        render_release_card(tmp_path)


def test_validate_card_rejects_broken_metadata():
    with pytest.raises(ValueError, match="misses"):
        validate_card("---\nlicense: apache-2.0\n---\n# card\n")
    broken_index = (
        "---\nlicense: apache-2.0\nlanguage: en\nlibrary_name: transformers\ntags: [bert]\n"
        "model-index:\n- name: x\n  results:\n  - task: {type: token-classification}\n"
        "    dataset: {name: d, type: d}\n    metrics:\n    - {type: f1, value: n/a}\n---\n"
    )
    with pytest.raises(ValueError, match="not a number"):
        validate_card(broken_index)


def test_dataset_ids_that_datasets_4_cannot_load_are_refused(release_v03, tmp_path):
    """Script-only ids (bigbio/*) no longer load with datasets >= 4: refused in NER results and training
    datasets, naming where they came from; without an id the model-index names the data and still parses."""
    with pytest.raises(
        ValueError, match=r"ner_results: 'bigbio/blurb' is a loading-script dataset, which datasets >= 4"
    ):
        render_release_card(release_v03, [dict(BC5CDR, dataset_id="bigbio/blurb")])
    with pytest.raises(ValueError, match=r"datasets of the card of .*v0.3: 'bigbio/pubmed' is a loading-script"):
        render_release_card(release_v03, datasets=["bigbio/pubmed"])
    with pytest.raises(ValueError, match=r"'not a/valid id' is not a Hub dataset id"):
        render_release_card(release_v03, datasets=["not a/valid id"])
    without_id = {k: v for k, v in BC5CDR.items() if k not in ("dataset_id", "dataset_config")}
    text = render_release_card(
        release_v03, [without_id], repo_id="acme/bioptimus", datasets=["acme/pubmed-abstracts-parquet"]
    )
    validate_card(text)
    metadata = metadata_load(_write(tmp_path, text))
    assert metadata["datasets"] == ["acme/pubmed-abstracts-parquet"]
    assert metadata["base_model"] == "bert-base-uncased"
    _, results = model_index_to_eval_results(metadata["model-index"])
    assert {(r.dataset_type, r.dataset_name) for r in results} == {("BC5CDR-chem", "BC5CDR-chem")}
    # The Hub's own builder gives the same entry as our model-index (what the Hub renders).
    from huggingface_hub import metadata_eval_result

    reference = metadata_eval_result(
        model_pretty_name="acme/bioptimus",
        task_pretty_name="Named Entity Recognition",
        task_id="token-classification",
        metrics_pretty_name="Test entity-level f1, mean of 5 seeds",
        metrics_id="f1",
        metrics_value=0.9312,
        dataset_pretty_name="BC5CDR-chem",
        dataset_id="BC5CDR-chem",
        dataset_split="test",
    )
    ours = metadata["model-index"][0]["results"][0]
    assert ours["task"] == reference["model-index"][0]["results"][0]["task"]
    assert ours["dataset"] == reference["model-index"][0]["results"][0]["dataset"]
    expected_metric = dict(reference["model-index"][0]["results"][0]["metrics"][0])
    assert expected_metric.pop("verified") is False  # the Hub's default: left out of our cards
    assert ours["metrics"][0] == expected_metric


# ----------------------------------------------------------------------------------------------- the model as it is
ROBERTA_VOCAB = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"] + [
    "Ġ" + word for word in "the protein gene cell binds".split()
]
CURRICULUM_TAGS = ["fill-mask", "bioptimus", "curriculum-learning", "pubmed"]


def replace_checkpoint(release, model, tokenizer=None):
    """Keep the release's record, replace its model (and tokenizer) files."""
    for path in release.iterdir():
        if path.name != PHASE_FILE and (
            tokenizer is not None or not path.name.startswith(("tokenizer", "special", "vocab"))
        ):
            path.unlink()
    model.save_pretrained(release)
    if tokenizer is not None:
        tokenizer.save_pretrained(release)
    return release


def make_roberta_release(release_dir, phase_index):
    """A tiny RobertaForMaskedLM release with a byte-level BPE tokenizer (mask ``<mask>``), make_release's record."""
    torch.manual_seed(0)
    config = RobertaConfig(
        vocab_size=len(ROBERTA_VOCAB),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=40,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
    )
    tokenizer = RobertaTokenizer(vocab={token: i for i, token in enumerate(ROBERTA_VOCAB)}, merges=[])
    return replace_checkpoint(make_release(release_dir, phase_index), RobertaForMaskedLM(config), tokenizer)


def test_roberta_release_is_carded_as_roberta_with_its_mask_token(tmp_path):
    release = make_roberta_release(tmp_path / "v0.4", 3)  # the last phase: no corruption, every pick masked
    text = render_release_card(release, repo_id="acme/bioptimus-roberta")
    validate_card(text)
    metadata = metadata_load(_write(tmp_path, text))
    assert metadata["tags"] == ["biomedical", "roberta", *CURRICULUM_TAGS]
    assert "A biomedical RoBERTa masked language model" in text and "BERT masked" not in text
    assert "100 % <mask>" in text and "[MASK]" not in text
    assert "Architecture: RobertaForMaskedLM, 1 layers, hidden size 16, 2 attention heads" in text


def test_bert_release_card_names_bert_as_before(tmp_path, release_v03):
    text = render_release_card(make_release(tmp_path / "v0.4", 3), repo_id="acme/bioptimus")
    assert metadata_load(_write(tmp_path, text))["tags"] == ["biomedical", "bert", *CURRICULUM_TAGS]
    assert "A biomedical BERT masked language model" in text and "100 % [MASK]" in text
    assert "Architecture: BertForMaskedLM, 1 layers, hidden size 16" in text
    assert "80/10/10 (mask/random/keep)" in render_release_card(release_v03)


def test_distilbert_sizes_come_through_its_own_config_names(tmp_path):
    config = DistilBertConfig(vocab_size=15, dim=16, n_layers=1, n_heads=2, hidden_dim=32, max_position_embeddings=32)
    release = replace_checkpoint(make_release(tmp_path / "v0.1", 0), DistilBertForMaskedLM(config))
    text = render_release_card(release)
    assert "A biomedical DistilBERT masked language model" in text
    assert "Architecture: DistilBertForMaskedLM, 1 layers, hidden size 16, 2 attention heads" in text
    assert ModelCard(text).data.tags[:2] == ["biomedical", "distilbert"]


def test_no_family_is_claimed_without_a_config(tmp_path):
    release = make_release(tmp_path / "v0.4", 3)
    (release / "config.json").unlink()
    text = render_release_card(release)
    assert "A biomedical masked language model" in text and "BERT" not in text.split("## Citation")[0]
    assert ModelCard(text).data.tags == ["biomedical", *CURRICULUM_TAGS]
    assert "100 % [MASK]" in text  # the tokenizer still says what its mask is


def test_student_card_of_a_roberta_names_roberta(tmp_path):
    release = make_roberta_release(tmp_path / "student", 3)
    facts = DistillationFacts(
        recipe="tinybiobert",
        student_init="random",
        student_layers=[0],
        layer_map=[1],
        loss_weights={"mlm": 1.0},
        student_num_layers=1,
        student_hidden_size=16,
        teacher_num_layers=2,
        teacher_hidden_size=32,
    )
    dataclasses.replace(ReleaseInfo.load(release), distillation=facts).save(release)  # a student's record
    text = render_release_card(release)
    validate_card(text)
    assert "A compact biomedical RoBERTa masked language model **distilled**" in text
    assert "It is a plain `RobertaForMaskedLM`" in text
    assert ModelCard(text).data.tags == [
        "biomedical",
        "roberta",
        "fill-mask",
        "bioptimus",
        "knowledge-distillation",
        "pubmed",
    ]


def test_student_card_shows_the_recipe_and_loss_descriptions_its_record_carries(tmp_path):
    release = make_roberta_release(tmp_path / "student", 3)
    facts = DistillationFacts(
        recipe="distilbiobert",
        recipe_name="DistilBioBERT",
        recipe_description="half depth, KL",
        loss_descriptions={"kl": "KL at the masked positions"},
        student_init="teacher_layers",
        student_layers=[0],
        layer_map=[0],
        loss_weights={"mlm": 2.0, "kl": 5.0},
    )
    dataclasses.replace(ReleaseInfo.load(release), distillation=facts).save(release)
    text = render_release_card(release)
    assert "with the **DistilBioBERT** recipe of Rohanian et al." in text and "\nhalf depth, KL.\n" in text
    assert "| `kl` | 5.0 | KL at the masked positions |" in text
    assert "| `mlm` | 2.0 |  |" in text  # a loss the record does not describe is shown without a description

    # a record without the descriptions names the recipe by its key: the card never guesses
    bare = dataclasses.replace(facts, recipe_name=None, recipe_description=None, loss_descriptions={})
    dataclasses.replace(ReleaseInfo.load(release), distillation=bare).save(release)
    text = render_release_card(release)
    assert "with the **distilbiobert** recipe" in text and "\nrecipe not recorded.\n" in text


# ----------------------------------------------------------------------------------------------- lineage
MINILM_PARENT = "nreimers/MiniLM-L6-H384-uncased"  # what the packaged all-MiniLM-L6-v2's config names


def test_a_release_from_a_local_copy_names_its_base_model_only_when_given(
    monkeypatch, tmp_path, tiny_model_dir, make_corpus
):
    """A local base model whose config.json names another Hub model (as the packaged all-MiniLM-L6-v2 names the
    model it was fine-tuned from): no base_model is guessed from it; --base_model_hub_id names one."""
    local = shutil.copytree(tiny_model_dir, tmp_path / "all-MiniLM-L6-v2")
    config = json.loads((local / "config.json").read_text())
    (local / "config.json").write_text(json.dumps({**config, "_name_or_path": MINILM_PARENT}))
    corpus = make_corpus(200)
    for given in (None, "sentence-transformers/all-MiniLM-L6-v2"):
        out = tmp_path / ("given" if given else "not-given")
        flags = curriculum_run_flags(local, corpus, out, (1, 1, 1, 1), base_model_hub_id=given, bulk_dropout=False)
        run_script(monkeypatch, run_pretraining, flags)
        releases = find_releases(out)
        assert [release.name for release in releases] == ["v0.1", "v0.2", "v0.3", "v0.4"]
        for release in releases:
            text = (release / "README.md").read_text()
            card, run = validate_card(text), ReleaseInfo.load(release).run
            assert MINILM_PARENT not in text and MINILM_PARENT not in (release / PHASE_FILE).read_text()
            if given:
                assert card.data.base_model == given and run.base_model_hub_id == given == run.base_model
                assert f"- Base model: `{given}`\n" in text
            else:
                assert "base_model" not in card.data.to_dict()
                assert run.base_model_hub_id is None and run.base_model == "all-MiniLM-L6-v2"
                assert f"- Base model: started from {local_checkpoint_text('all-MiniLM-L6-v2')}\n" in text
                assert "its Hub id was not given, so the card's metadata names no `base_model`" in text


def test_a_student_of_a_local_teacher_names_no_base_model_and_says_why(tmp_path):
    release = make_release(tmp_path / "student", 3, run=tiny_run_args(base_model="teacher", base_model_hub_id=None))
    facts = DistillationFacts(teacher="teacher", teacher_hub_id=None, recipe="tinybiobert", student_layers=[0])
    dataclasses.replace(ReleaseInfo.load(release), distillation=facts).save(release)
    text = render_release_card(release)
    assert "base_model" not in validate_card(text).data.to_dict()
    assert f"- Teacher: {local_checkpoint_text('teacher')}\n" in text

    given = dataclasses.replace(facts, teacher="acme/teacher", teacher_hub_id="acme/teacher")
    run = dataclasses.replace(
        ReleaseInfo.load(release).run, base_model="acme/teacher", base_model_hub_id="acme/teacher"
    )
    dataclasses.replace(ReleaseInfo.load(release), distillation=given, run=run).save(release)
    text = render_release_card(release)
    assert validate_card(text).data.base_model == "acme/teacher"
    assert "- Teacher: [`acme/teacher`](https://huggingface.co/acme/teacher)\n" in text


@pytest.mark.parametrize("script", [run_pretraining, run_ner, run_distillation], ids=lambda m: m.__name__)
def test_every_script_that_writes_a_base_model_takes_base_model_hub_id(script, capsys):
    with pytest.raises(SystemExit) as done:
        script.main(["--help"])
    assert done.value.code == 0
    usage = " ".join(capsys.readouterr().out.split())
    assert "--base_model_hub_id" in usage and "Never guessed" in usage
    if script is run_distillation:  # the same field as --teacher_hub_id
        assert "--teacher_hub_id, --base_model_hub_id TEACHER_HUB_ID" in usage  # one flag, two names
