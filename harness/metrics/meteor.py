"""METEOR as QChunker reports it (Table 1; ``chunk.ipynb``): NLTK's ``meteor_score`` with its
defaults (alpha 0.9, beta 3, gamma 0.5, Porter stemmer, WordNet synonyms, tokens lower-cased)
on ``" ".join(jieba.cut(text)).split()`` tokens, best over the references.

WordNet comes from disk, never from a download: NLTK's ``WordNetCorpusReader`` reads the
WordNet 3.0 database files. By default they are Debian's ``wordnet-base`` package
(``apt-get install -y wordnet-base`` puts them in ``/usr/share/wordnet``); ``wordnet_dir`` (or
the environment variable ``CHUNKBENCH_WORDNET_DIR``) names any other WordNet 3.0 ``dict``
folder, NLTK's own ``corpora/wordnet`` included. Debian ships no ``lexnames`` file (the
lexicographer file names, fixed by WordNet 3.0's ``lexnames(5WN)``), so it is supplied below.
On Chinese text WordNet finds nothing, so only exact and stem matches count there. NLTK's
synonym stage runs on the words left after stemming, so a reference word matches a synonym
only when its Porter stem is that synonym ("auto" matches "car"; "automobile", stemmed to
"automobil", does not): that is the METEOR QChunker's numbers come from.
"""

from __future__ import annotations

import io
import os
import warnings
from functools import lru_cache
from pathlib import Path

from harness.metrics.answers import answer_inputs, nan_scores
from harness.metrics.base import QueryEval, QueryMetric
from harness.metrics.tokenizers import check_choice, get_tokenizer
from harness.types import ConfigError

DEFAULT_WORDNET_DIR = "/usr/share/wordnet"
WORDNET_ENV = "CHUNKBENCH_WORDNET_DIR"
_REQUIRED = [f"{kind}.{pos}" for kind in ("index", "data") for pos in ("noun", "verb", "adj", "adv")] + [
    f"{pos}.exc" for pos in ("noun", "verb", "adj", "adv")]
# WordNet 3.0 lexicographer files in file-number order (lexnames(5WN)); the syntactic category
# in the third column follows from the prefix.
_LEXNAMES = (
    "adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute noun.body "
    "noun.cognition noun.communication noun.event noun.feeling noun.food noun.group noun.location "
    "noun.motive noun.object noun.person noun.phenomenon noun.plant noun.possession noun.process "
    "noun.quantity noun.relation noun.shape noun.state noun.substance noun.time verb.body verb.change "
    "verb.cognition verb.communication verb.competition verb.consumption verb.contact verb.creation "
    "verb.emotion verb.motion verb.perception verb.possession verb.social verb.stative verb.weather adj.ppl"
).split()
_CATEGORY = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}
LEXNAMES_TEXT = "".join(f"{i:02d}\t{n}\t{_CATEGORY[n.split('.')[0]]}\n" for i, n in enumerate(_LEXNAMES))


class WordNetMissing(FileNotFoundError):
    """The WordNet 3.0 database files METEOR needs are not on disk."""


def find_wordnet_dir(path: str | None = None) -> Path:
    """The WordNet folder to read: ``path``, else $CHUNKBENCH_WORDNET_DIR, else Debian's."""
    chosen = Path(path or os.environ.get(WORDNET_ENV) or DEFAULT_WORDNET_DIR)
    missing = [f for f in _REQUIRED if not (chosen / f).is_file()]
    if missing:
        raise WordNetMissing(
            f"METEOR needs the WordNet 3.0 database files, and {chosen} lacks {', '.join(missing[:3])}"
            f"{'...' if len(missing) > 3 else ''}. Install Debian's package (apt-get install -y wordnet-base, "
            f"files in {DEFAULT_WORDNET_DIR}) or point the metric's wordnet_dir (or ${WORDNET_ENV}) at a "
            "WordNet 3.0 dict folder. Nothing is downloaded at run time.")
    return chosen


@lru_cache(maxsize=2)
def load_wordnet(path: str | None = None):
    """An NLTK WordNet reader over the files in :func:`find_wordnet_dir` (about 1.5 s to load)."""
    import nltk
    from nltk.corpus.reader.wordnet import WordNetCorpusReader
    from nltk.data import FileSystemPathPointer

    root = find_wordnet_dir(path).resolve()
    # NLTK >= 3.9 only opens corpus files under its data path.
    if str(root) not in nltk.data.path:
        nltk.data.path.append(str(root))
    has_lexnames = (root / "lexnames").is_file()

    class _Reader(WordNetCorpusReader):
        def open(self, fileid):
            if fileid == "lexnames" and not has_lexnames:
                return io.StringIO(LEXNAMES_TEXT)
            return super().open(fileid)

        def map_wn(self, version="wordnet"):
            # These files are WordNet 3.0 itself: no mapping to NLTK's copy (which may be absent).
            return None

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "multilingual functions are not available": OMW is not used
        return _Reader(FileSystemPathPointer(str(root)), None)


def meteor(prediction: str, references: list[str], tokenizer: str = "jieba_words", wordnet_path: str | None = None,
           alpha: float = 0.9, beta: float = 3.0, gamma: float = 0.5) -> float:
    """NLTK METEOR of ``prediction`` against ``references`` (best single-reference score)."""
    from nltk.translate.meteor_score import meteor_score

    tok = get_tokenizer(tokenizer)
    return float(meteor_score([tok(r) for r in references], tok(prediction), wordnet=load_wordnet(wordnet_path),
                              alpha=alpha, beta=beta, gamma=gamma))


class Meteor(QueryMetric):
    """METEOR, best over gold answers. ``tokenizer``: ``jieba_words`` (QChunker) or ``whitespace``;
    ``wordnet_dir``: a WordNet 3.0 folder (default: $CHUNKBENCH_WORDNET_DIR or /usr/share/wordnet);
    ``alpha``, ``beta``, ``gamma``: NLTK's parameters."""

    def __init__(self, tokenizer: str = "jieba_words", wordnet_dir: str | None = None, alpha: float = 0.9,
                 beta: float = 3.0, gamma: float = 0.5, name: str = "meteor"):
        self.tokenizer = check_choice(tokenizer, ("jieba_words", "whitespace"), "tokenizer")
        if not 0 < alpha <= 1:
            raise ConfigError(f"alpha must be in (0, 1], got {alpha}")
        if beta <= 0 or not 0 <= gamma <= 1:
            raise ConfigError(f"beta must be > 0 and gamma in [0, 1], got beta={beta}, gamma={gamma}")
        # Fail at build time, before a long run, when WordNet is missing.
        find_wordnet_dir(wordnet_dir)
        self.wordnet_path, self.alpha, self.beta, self.gamma, self.name = wordnet_dir, alpha, beta, gamma, name

    def keys(self) -> set[str]:
        return {self.name}

    def __call__(self, item: QueryEval) -> dict[str, float]:
        inp = answer_inputs(item)
        if inp is None:
            return nan_scores([self.name])
        return {self.name: meteor(inp.prediction, list(inp.golds), self.tokenizer, self.wordnet_path,
                                  self.alpha, self.beta, self.gamma)}
