"""Test helper, run under torchrun with gloo: contextualized initialisation on every rank of a corpus whose
qik-find search must run once (rank 0); each rank writes its vectors and how many searches it ran."""

import json
import sys
from pathlib import Path

import torch

import bioptimus_hf.vocabulary.qikfind as qikfind
from bioptimus_hf.utils.distributed import close_process_group
from bioptimus_hf.vocabulary.embedding_init import ContextualizedEmbeddingInitializer
from helpers.embedding_init import NEW_VOCAB, init_args, make_base, make_tokenizer


INIT_SETTINGS = dict(
    init_device="cpu", max_contexts_per_token=20, init_norm_match=False, init_batch_size=4, init_precision="float32"
)


def initialise(work_dir, corpus):
    model, base_tok = make_base(Path(work_dir))
    new_tok = make_tokenizer(NEW_VOCAB, Path(work_dir) / "new_tok")
    initializer = ContextualizedEmbeddingInitializer(
        model, base_tok, new_tok, init_args(**INIT_SETTINGS), progress=False
    )
    _, report = initializer.initialize(corpus_files=[str(corpus)])
    return initializer, report


if __name__ == "__main__":  # torchrun entry point: corpus_file output_dir
    corpus, output_dir = sys.argv[1:3]
    torch.distributed.init_process_group("gloo")
    rank = torch.distributed.get_rank()
    searches = []
    search = qikfind.find_contexts

    def counted(*args, **kwargs):
        searches.append(1)
        return search(*args, **kwargs)

    qikfind.find_contexts = counted
    work = Path(output_dir, f"work{rank}")
    work.mkdir(parents=True)
    initializer, report = initialise(work, corpus)
    Path(output_dir, f"rank{rank}.json").write_text(
        json.dumps(
            {
                "searches": len(searches),
                "forward_passes": initializer.forward_passes,
                "world": report["forward"]["world_size"],
                "vectors": {str(t): v.tolist() for t, v in initializer.vectors.items()},
            }
        )
    )
    close_process_group()
