"""Writing releases (bioptimus_hf.releases.writer): a process killed at any point never loses a release."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bioptimus_hf.releases.record import ReleaseInfo, find_releases
from bioptimus_hf.releases.writer import recover_interrupted_replacements


REPO_ROOT = Path(__file__).resolve().parents[1]

# Writes release v0.1 twice (first with loss 1.0, then 2.0) in a child process; FAULT (Python source run
# before the second write) may patch the writer so that the child kills itself with SIGKILL mid-way.
CHILD = textwrap.dedent("""
    import os, shutil, signal, sys
    from pathlib import Path
    import torch
    from transformers import BertConfig, BertForMaskedLM, BertTokenizer
    from bioptimus_hf.releases import writer
    from bioptimus_hf.releases.record import ReleaseInfo

    releases = Path(sys.argv[1])
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "cell", "gene"]
    tokenizer = BertTokenizer(vocab={t: i for i, t in enumerate(vocab)})
    torch.manual_seed(0)
    model = BertForMaskedLM(BertConfig(vocab_size=len(vocab), hidden_size=8, num_hidden_layers=1,
                                       num_attention_heads=2, intermediate_size=16, max_position_embeddings=16))

    def info(loss):
        return ReleaseInfo("0.1", 0, "token", 0.15, True, heldout_mlm_loss=loss)

    def die(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    writer.write_release(releases / "v0.1", model, tokenizer, info(1.0))
    {fault}
    writer.write_release(releases / "v0.1", model, tokenizer, info(2.0))
""")

FAULTS = {
    # killed while the new copy is being written: the old release is untouched
    "during-write": "writer.ReleaseInfo.save = die",
    # no atomic exchange (non-Linux): killed after the old copy was moved aside, before the new one is in place
    "between-renames": textwrap.dedent("""
        from bioptimus_hf.utils import files
        files._exchange = lambda a, b: False
        real_rename = Path.rename
        def rename(self, target):
            if self.name.endswith(".partial"):
                die()
            return real_rename(self, target)
        Path.rename = rename
    """),
    # killed right after the atomic exchange, before the previous copy is removed
    "after-exchange": textwrap.dedent("""
        real_rmtree = shutil.rmtree
        def rmtree(path, *args, **kwargs):
            if str(path).endswith(".partial") and (Path(path) / "bioptimus_phase.json").is_file():
                die()
            return real_rmtree(path, *args, **kwargs)
        writer.shutil.rmtree = rmtree
    """),
}


def _killed_child(tmp_path, fault):
    releases = tmp_path / "releases"
    code = CHILD.replace("{fault}", FAULTS[fault])
    result = subprocess.run(
        [sys.executable, "-c", code, str(releases)], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == -9, result.stderr[-2000:]  # SIGKILL at the chosen point
    return releases


@pytest.mark.parametrize(
    "fault,surviving_loss", [("during-write", 1.0), ("between-renames", 1.0), ("after-exchange", 2.0)]
)
def test_a_release_survives_a_kill_at_any_point_of_its_replacement(tmp_path, fault, surviving_loss):
    from transformers import AutoModelForMaskedLM

    releases = _killed_child(tmp_path, fault)
    recover_interrupted_replacements(releases)  # what the next write (or run start) does first
    found = find_releases(releases)
    assert [p.name for p in found] == ["v0.1"]
    assert ReleaseInfo.load(found[0]).heldout_mlm_loss == surviving_loss  # a complete copy, old or new
    AutoModelForMaskedLM.from_pretrained(found[0])  # loads
    assert sorted(p.name for p in releases.iterdir()) == ["v0.1"]  # temporaries cleaned up


def test_readers_ignore_an_interrupted_replacement_until_it_is_recovered(tmp_path):
    releases = _killed_child(tmp_path, "between-renames")
    assert sorted(p.name for p in releases.iterdir()) == ["v0.1.old", "v0.1.partial"]
    with pytest.raises(FileNotFoundError, match="no release directories"):
        find_releases(releases)  # neither temporary is taken for a release (nor staged for the Hub)
    assert [p.name for p in recover_interrupted_replacements(releases)] == ["v0.1"]
