"""procobject's sentence similarity and BERTScore F1 (envs/procobject/similarity.py) through
``harness judge`` with a local scorer, on a tiny random-weight BERT built here: the stored values
equal the libraries' own direct calls on the same pairs; the model is in the judge's identity; a
model that can't be loaded is 'not computed' (no row); a rerun scores nothing twice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("sentence_transformers")
pytest.importorskip("bert_score")

from harness.cli.entry import main  # noqa: E402
from harness.store import ResultStore  # noqa: E402
from tests.envs.procobject.conftest import RECORDS  # noqa: E402

WORDS = ("the a kettle must have boiled lid was left open not yet it is still sticky dough water "
         "ready wrong before pouring boiling closed").split()


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory) -> Path:
    """A 2-layer BERT with random weights (seeded) and a word-level vocabulary, saved as a folder."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    folder = tmp_path_factory.mktemp("tiny_bert")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, *"abcdefghijklmnopqrstuvwxyz.,"]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    BertTokenizerFast(vocab_file=str(folder / "vocab.txt"), do_lower_case=True,
                      model_max_length=64).save_pretrained(folder)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64)
    BertModel(config).save_pretrained(folder)
    return folder


ANSWERS = {"1": "The kettle must have boiled water before pouring.", "2": "The lid was left open.",
           "3": "not json at all"}


@pytest.fixture(scope="module")
def answered(po_data, tmp_path_factory) -> Path:
    """A store of a scripted run: answers 1 and 2 readable (2 equals its reference), 3 unreadable."""
    from harness.check.scripted import scripted_replies

    def reply(text, schema, call):
        for qid, rec in ((r["id"], r) for r in RECORDS):
            if rec["question"] in text:
                answer = ANSWERS[str(qid)]
                return answer if qid == 3 else json.dumps({"answer": answer, "evidence": [[0.0, 1.0]]})
        raise AssertionError(text)

    out = tmp_path_factory.mktemp("sim") / "run"
    with scripted_replies(reply, name="po_sim"):
        assert main(["run", "suite=procobject", "planner=vlm", "planner.params.backend=scripted",
                     "planner.params.script=po_sim", "planner.params.model=scripted", "planner.params.visual=none",
                     f"suite.params.data_dir={po_data}", f"out={out}", "progress=false"]) == 0
    return out


def _copy(store: Path, tmp_path: Path) -> Path:
    import shutil

    dest = tmp_path / "store"
    shutil.copytree(store, dest)
    return dest


PAIRS = [(ANSWERS["1"], RECORDS[0]["answer"]), (ANSWERS["2"], RECORDS[1]["answer"])]


def test_sentence_similarity_equals_the_library(answered, tiny_bert, tmp_path, capsys):
    from sentence_transformers import SentenceTransformer, util

    out = _copy(answered, tmp_path)
    assert main(["judge", str(out), "judge=sentence_similarity", f"judge.model={tiny_bert}",
                 "judge.rubric.device=cpu"]) == 0
    rows = ResultStore(out, readonly=True).judgements().set_index("episode_id")
    assert sorted(rows.index) == ["1", "2"]  # the unreadable reply is not scored
    model = SentenceTransformer(str(tiny_bert), device="cpu")
    for qid, (answer, reference) in zip(("1", "2"), PAIRS):
        direct = float(util.cos_sim(model.encode([answer]), model.encode([reference]))[0, 0])
        assert rows.loc[qid, "status"] == "ok"
        assert rows.loc[qid, "values"]["sentence_similarity"] == pytest.approx(direct, abs=1e-6)
    assert rows.loc["2", "values"]["sentence_similarity"] == pytest.approx(1.0, abs=1e-6)  # the same text
    identity = rows.loc["1", "identity"]
    assert identity["model"] == str(tiny_bert) and identity["rubric"]["library"] == "sentence-transformers"
    assert identity["backend_identity"]["checkpoint"]["sha256"]
    # a rerun scores nothing again
    capsys.readouterr()
    assert main(["judge", str(out), "judge=sentence_similarity", f"judge.model={tiny_bert}",
                 "judge.rubric.device=cpu"]) == 0
    assert "0 answer(s) to judge, 2 already judged" in capsys.readouterr().err


def test_bertscore_f1_equals_the_library(answered, tiny_bert, tmp_path):
    import bert_score

    out = _copy(answered, tmp_path)
    assert main(["judge", str(out), "judge=bertscore", f"judge.model={tiny_bert}", "judge.rubric.num_layers=2",
                 "judge.rubric.device=cpu"]) == 0
    rows = ResultStore(out, readonly=True).judgements().set_index("episode_id")
    _, _, f1 = bert_score.score([a for a, _ in PAIRS], [r for _, r in PAIRS], model_type=str(tiny_bert),
                                num_layers=2, device="cpu")
    for qid, direct in zip(("1", "2"), f1.tolist()):
        assert rows.loc[qid, "values"]["bertscore_f1"] == pytest.approx(direct, abs=1e-6)
    identity = rows.loc["1", "identity"]
    assert identity["rubric"]["num_layers"] == 2 and identity["rubric"]["library"] == "bert-score"


def test_the_model_and_its_weights_are_in_the_identity(answered, tiny_bert, tmp_path):
    import shutil

    import torch
    from transformers import BertModel

    out = _copy(answered, tmp_path)
    other = tmp_path / "other_bert"
    shutil.copytree(tiny_bert, other)
    torch.manual_seed(1)
    BertModel(BertModel.from_pretrained(str(tiny_bert)).config).save_pretrained(other)  # other weights
    for model in (tiny_bert, other):
        assert main(["judge", str(out), "judge=sentence_similarity", f"judge.model={model}",
                     "judge.rubric.device=cpu"]) == 0
    judgements = ResultStore(out, readonly=True).judgements()
    assert judgements["judge_id"].nunique() == 2 and len(judgements) == 4


def test_a_model_that_cannot_be_loaded_is_not_computed(answered, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = _copy(answered, tmp_path)
    capsys.readouterr()
    code = main(["judge", str(out), "judge=sentence_similarity", "judge.model=no-such-org/no-such-model"])
    err = capsys.readouterr().err
    assert code == 1
    assert "not computed: model 'no-such-org/no-such-model' is not a local folder nor in the local cache" in err
    assert len(ResultStore(out, readonly=True).judgements()) == 0  # nothing faked


def test_bad_scorer_settings_are_one_line_exit_2(answered, tiny_bert, tmp_path, capsys):
    out = _copy(answered, tmp_path)
    capsys.readouterr()
    # a local checkpoint bert-score does not list needs its layer
    assert main(["judge", str(out), "judge=bertscore", f"judge.model={tiny_bert}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "num_layers" in err[0]
    assert len(ResultStore(out, readonly=True).judgements()) == 0


def test_suites_without_the_scorer_are_skipped(answered, tiny_bert, cfg_data, tmp_path, capsys):
    """A store that also holds cfg_bench answers: the local scorer scores procobject's and names
    cfg_bench as skipped; a store of cfg_bench alone has nothing to score (one line, exit 2)."""
    out = _copy(answered, tmp_path)
    assert main(["run", "suite=cfg_bench", "planner=oracle", f"suite.params.data_dir={cfg_data}", f"out={out}",
                 "progress=false"]) == 0
    assert main(["judge", str(out), "judge=sentence_similarity", f"judge.model={tiny_bert}",
                 "judge.rubric.device=cpu"]) == 0
    rows = ResultStore(out, readonly=True).judgements()
    assert set(rows["suite"]) == {"procobject"} and len(rows) == 2
    only_cfg = tmp_path / "cfg_only"
    assert main(["run", "suite=cfg_bench", "planner=oracle", f"suite.params.data_dir={cfg_data}", f"out={only_cfg}",
                 "progress=false"]) == 0
    capsys.readouterr()
    assert main(["judge", str(only_cfg), "judge=sentence_similarity", f"judge.model={tiny_bert}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "suite cfg_bench has no local scorer" in err[0]
