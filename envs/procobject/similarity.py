"""ProcObject-10K's embedding-level answer metrics: sentence similarity and BERTScore F1.

The paper reports both beside the judge's J ("Sentence Similarity" after Sentence-BERT,
"BERT-Score F1" after BERTScore; WenliangGuo/ProcObject-10K-Page at
21702a847363a58df645ba9919805befb91fc212, tools/paper/5_experiment.tex:19). They are computed by
the maintained libraries, never re-implemented:

- ``sentence_similarity``: the cosine similarity of the answer's and the reference's
  sentence-transformers embeddings (``util.cos_sim``), in [-1, 1];
- ``bertscore_f1``: bert-score's F1 (``BERTScorer.score``), no idf weighting, no baseline
  rescaling (the library's defaults).

Both run as local scorers of ``harness judge`` (``judge.backend=local``; configs
``sentence_similarity`` and ``bertscore``): a post-pass over the stored answers, each value one
row of the store's judgements, under a judge identity that holds the library and its version,
the scoring model's name and the checkpoint identity of the folder it was loaded from, and the
scorer's settings. Defaults, the scoring model (``judge.model``):

- sentence similarity: ``sentence-transformers/all-MiniLM-L6-v2``, the model of the ancestor
  benchmark's answer scorer (qirui-chen/MultiHop-EgoQA at
  01ed3e105528ad384a3f5c16ffa953eb482cb5fd, benchmark/metrics/answering_metrics.py:34; at :46 it
  takes the dot product of that model's embeddings, which the model normalises, so the cosine). The
  ProcObject-10K code repository could not be read in this build: its choice is unconfirmed.
- BERTScore: ``roberta-large`` at layer 17, the library's own default for English
  (Tiiiger/bert_score at cb582ed5c88b02230b8f101173fd959b68023dc6, bert_score/utils.py:32
  ``lang2model["en"]`` and :47 ``model2layers``; the same in bert-score 0.3.13).

A model that can't be loaded here (not a local folder, not in the local cache, and not
downloadable) makes the metric *not computed*: :class:`harness.judging.verdicts.NotComputed`, no row
written, and ``harness judge`` ends with ``not computed: <reason>``. A reply without a readable
``answer`` is not scored (as the judge does not judge it): the means run over readable answers,
and the unreadable ones are counted by ``reply_unreadable``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, Sequence

from envs.procobject.answer import answer_text
from harness.judging.verdicts import NotComputed, Verdict
from harness.types import EpisodeSpec

SCORERS = ("sentence_similarity", "bertscore")
#: The value each scorer stores (the suite's metrics read these keys).
VALUE = {"sentence_similarity": "sentence_similarity", "bertscore": "bertscore_f1"}
#: Bumped when what is compared, or how, changes.
VERSION = "procobject-similarity-1"


def resolve_model(name: str) -> str:
    """A local folder holding model ``name``: the path itself, else the local cache's copy,
    else a download (unless ``HF_HUB_OFFLINE`` is set). :class:`NotComputed` when none works."""
    if Path(name).expanduser().is_dir():
        return str(Path(name).expanduser())
    try:
        import huggingface_hub
    except ImportError as exc:
        raise NotComputed(f"model {name!r}: huggingface_hub is not installed ({exc})") from None
    try:
        return huggingface_hub.snapshot_download(name, local_files_only=True)
    except Exception:  # noqa: BLE001 - not cached (or not a repo id): try the network below
        pass
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        raise NotComputed(f"model {name!r} is not a local folder nor in the local cache (HF_HUB_OFFLINE is set)")
    try:
        return huggingface_hub.snapshot_download(name)
    except Exception as exc:  # noqa: BLE001 - no network, no such model: the metric is not computed
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        raise NotComputed(f"model {name!r} could not be loaded ({type(exc).__name__}: {first})") from None


def _device(device: str) -> str:
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


class SimilarityScorer:
    """One of :data:`SCORERS` over procobject's stored answers (a ``harness.judging.verdicts.LocalScorer``)."""

    version = VERSION

    def __init__(self, scorer: str, model: str, num_layers: int | None = None, batch_size: int = 32,
                 device: str = "auto") -> None:
        if scorer not in SCORERS:
            raise ValueError(f"unknown procobject scorer {scorer!r} (scorers: {', '.join(SCORERS)})")
        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"procobject scorer {scorer} needs a model (judge.model=NAME_OR_PATH)")
        if num_layers is not None and (scorer != "bertscore" or int(num_layers) < 1):
            raise ValueError("judge.rubric.num_layers is bertscore's layer (a whole number >= 1)")
        self.scorer, self.model = scorer, model.strip()
        self.num_layers = None if num_layers is None else int(num_layers)
        self.batch_size, self.device = max(1, int(batch_size)), str(device)
        self._impl: Any = None
        if scorer == "bertscore" and self.num_layers is None:
            try:
                self._layers()  # a model bert-score does not list needs its layer: said now, one line
            except ImportError:
                pass  # not installed: prepare() says the metric is not computed

    def _library(self) -> tuple[str, str]:
        from importlib.metadata import PackageNotFoundError, version

        name = "sentence-transformers" if self.scorer == "sentence_similarity" else "bert-score"
        try:
            return name, version(name)
        except PackageNotFoundError:
            raise NotComputed(f"{name} is not installed (pip install '.[scoring]')") from None

    def identity(self) -> Mapping[str, Any]:
        library, library_version = self._library()
        out: dict[str, Any] = {"rubric": "procobject", "scorer": self.scorer, "version": self.version,
                               "library": library, "library_version": library_version, "model": self.model}
        if self.scorer == "bertscore":
            out.update(num_layers=self._layers(), idf=False, rescale_with_baseline=False)
        else:
            out.update(similarity="cosine")
        return out

    def _layers(self) -> int:
        if self.num_layers is not None:
            return self.num_layers
        from bert_score.utils import model2layers

        if self.model not in model2layers:
            raise ValueError(f"bertscore of {self.model!r} needs judge.rubric.num_layers "
                             "(bert-score knows the layer only of the models it lists)")
        return int(model2layers[self.model])

    def needs(self, record: Mapping[str, Any], episode: EpisodeSpec) -> bool:
        return answer_text(str((record.get("extra") or {}).get("answer") or "")) is not None

    def prepare(self) -> str:
        self._library()
        folder = resolve_model(self.model)
        device = _device(self.device)
        try:
            if self.scorer == "sentence_similarity":
                from sentence_transformers import SentenceTransformer

                self._impl = SentenceTransformer(folder, device=device)
            else:
                from bert_score import BERTScorer

                self._impl = BERTScorer(model_type=folder, num_layers=self._layers(), idf=False,
                                        rescale_with_baseline=False, batch_size=self.batch_size, device=device)
        except Exception as exc:  # noqa: BLE001 - a folder the library cannot load
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
            raise NotComputed(f"model {self.model!r} could not be loaded by {self._library()[0]} "
                              f"({type(exc).__name__}: {first})") from None
        return folder

    def score(self, items: Sequence[tuple[EpisodeSpec, str]]) -> list[Verdict]:
        if self._impl is None:
            self.prepare()
        answers = [answer_text(text) or "" for _, text in items]
        references = [str(episode.metadata["answer"]) for episode, _ in items]
        return [Verdict({VALUE[self.scorer]: x}, "ok") for x in self.values(answers, references)]

    def values(self, answers: Sequence[str], references: Sequence[str]) -> list[float]:
        """The metric of each (answer, reference) pair, through the library."""
        if self.scorer == "sentence_similarity":
            from sentence_transformers import util

            a = self._impl.encode(list(answers), batch_size=self.batch_size, convert_to_tensor=True)
            r = self._impl.encode(list(references), batch_size=self.batch_size, convert_to_tensor=True)
            return [float(x) for x in util.pairwise_cos_sim(a, r).cpu()]
        _, _, f1 = self._impl.score(list(answers), list(references), batch_size=self.batch_size)
        return [float(x) for x in f1.cpu()]


def make_scorer(params: Mapping[str, Any]) -> SimilarityScorer:
    known = {"scorer", "model", "num_layers", "batch_size", "device"}
    unknown = sorted(set(params) - known)
    if unknown:
        raise ValueError(f"unknown procobject scorer parameter {unknown[0]!r} (known: {', '.join(sorted(known))})")
    return SimilarityScorer(**dict(params))
