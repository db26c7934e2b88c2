"""Generic answer-quality metrics (ROUGE-L x2, BLEU, METEOR, BERTScore, QA similarity) against
hand-computed values and the public reference implementations."""

import math

import pytest

from harness.metrics.answers import query_language
from harness.metrics.bleu import SacreBleu, SentenceBleu, corpus_bleu, sacrebleu_sentence, sentence_bleu4
from harness.metrics.meteor import Meteor, WordNetMissing, load_wordnet, meteor
from harness.metrics.rouge_l import RougeL, rouge_l_google
from harness.types import Answer, ConfigError, Document, Query
from tests.conftest import query_eval

ZH_PRED, ZH_GOLD = "北京是中国的首都", "中国的首都是北京"  # jieba: 北京/是/中国/的/首都 vs 中国/的/首都/是/北京


def item(answer, golds, language="en", question="question?"):
    q = Query("q1", question, answers=tuple(golds), doc_ids=("d",))
    docs = {"d": Document("d", "text", language=language)}
    return query_eval(q, answer=None if answer is None else Answer("q1", answer), documents=docs)


def test_language_comes_from_the_query_documents_then_the_text():
    assert query_language(item("x", ["y"], "zh")) == "zh" and query_language(item("x", ["y"])) == "en"
    q = Query("q1", "首都是哪里？", answers=("北京",))
    assert query_language(query_eval(q, answer=Answer("q1", "x"))) == "zh"  # no document: CJK in the text


# --- ROUGE-L ---------------------------------------------------------------------------------

def test_rouge_l_google_hand_computed():
    # Token LCS "the cat on the mat" = 5 of 6 on both sides: P = R = F = 5/6.
    assert rouge_l_google("the cat sat on the mat", "the cat is on the mat") == pytest.approx(5 / 6, abs=1e-12)
    assert rouge_l_google("The CAT!", "the cat") == 1.0  # its tokenizer lower-cases and drops punctuation
    assert rouge_l_google("", "x") == 0.0


def test_rouge_l_google_needs_a_chinese_tokenizer():
    assert rouge_l_google(ZH_PRED, ZH_GOLD) == 0.0  # [a-z0-9] only: no tokens at all
    # jieba: LCS 中国/的/首都 = 3 of 5 on both sides -> 3/5.
    assert rouge_l_google(ZH_PRED, ZH_GOLD, tokenizer="jieba") == pytest.approx(0.6, abs=1e-12)


def test_rouge_l_google_agrees_with_rouge_score():
    from rouge_score import rouge_scorer

    ref = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    for pred, gold in [("the cats sat on the mats", "the cat is on the mat"), ("Running fast, runners ran", "run")]:
        assert rouge_l_google(pred, gold, use_stemmer=True) == pytest.approx(
            ref.score(gold, pred)["rougeL"].fmeasure, abs=1e-12)


def test_rouge_l_metric_names_implementations_apart_and_picks_tokenizer_by_language():
    py, google = RougeL("py"), RougeL("google")
    en = item("the cat sat on the mat", ["zzz", "the cat is on the mat"])  # the best gold counts
    assert py(en) == {"rouge_l_py": pytest.approx(2 * 0.64 / (1.6 + 1e-8), abs=1e-12)}
    assert google(en) == {"rouge_l_google": pytest.approx(5 / 6, abs=1e-12)}
    zh = item(ZH_PRED, [ZH_GOLD], "zh")
    assert py(zh)["rouge_l_py"] == pytest.approx(0.6, abs=1e-7)  # LongBench's rouge_zh
    assert google(zh)["rouge_l_google"] == pytest.approx(0.6, abs=1e-12)
    assert RougeL("google", tokenizer="default")(zh)["rouge_l_google"] == 0.0
    assert RougeL("py", name="rl")(item("", ["x"])) == {"rl": 0.0}  # empty answer: 0


def test_answer_metrics_are_nan_without_answer_or_gold():
    for metric in (RougeL("py"), RougeL("google"), SentenceBleu(), SacreBleu()):
        for it in (item(None, ["x"]), item("x", [])):
            scores = metric(it)
            assert len(scores) == 1 and all(math.isnan(v) for v in scores.values())


def test_bad_parameters_are_config_errors():
    with pytest.raises(ConfigError, match="implementation"):
        RougeL("pyrouge")
    with pytest.raises(ConfigError, match="tokenizer"):
        RougeL("google", tokenizer="whitespace")
    with pytest.raises(ConfigError, match="tokenizer"):
        SentenceBleu(tokenizer="spacy")
    with pytest.raises(ConfigError, match="tokenize"):
        SacreBleu(tokenize="moses")


# --- BLEU ------------------------------------------------------------------------------------

def test_sentence_bleu4_hand_computed():
    # "the cat sat on a mat" vs "the cat sat on the mat": n-gram precisions 5/6, 3/5, 2/4, 1/3,
    # equal lengths (BP 1): (5/6 * 3/5 * 1/2 * 1/3) ** (1/4) = (1/12) ** (1/4).
    assert sentence_bleu4("the cat sat on a mat", "the cat sat on the mat") == pytest.approx(
        (1 / 12) ** 0.25, abs=1e-12)
    # Brevity penalty: a 4-word exact prefix of 6 -> precisions 1, BP = exp(1 - 6/4).
    assert sentence_bleu4("the cat sat on", "the cat sat on the mat") == pytest.approx(math.exp(-0.5), abs=1e-12)
    # Unsmoothed (HiChunk): no 4-gram in common -> ~0; no word in common or empty -> 0.
    assert sentence_bleu4("the cat sat", "the cat sat on the mat") < 1e-60
    assert sentence_bleu4("", "x") == 0.0 and sentence_bleu4("a b c d", "e f g h") == 0.0


def test_sentence_bleu4_chinese_with_jieba():
    assert sentence_bleu4(ZH_PRED, ZH_GOLD) == 0.0  # one "word" each under str.split
    # jieba: unigram 5/5, bigrams 中国的 的首都 = 2/4, trigram 中国的首都 = 1/3, 4-grams 0/2 -> ~0.
    assert sentence_bleu4(ZH_PRED, ZH_GOLD, "jieba") < 1e-60
    assert sentence_bleu4("北京是中国的首都", "北京是中国的首都", "jieba") == 1.0


def test_sentence_bleu4_equals_unsmoothed_corpus_bleu_of_one_pair():
    """QChunker's BLEU (HF evaluate = NMT compute_bleu, unsmoothed, with BP) is NLTK's
    sentence BLEU of the same tokens: checked against sacreBLEU with the same settings."""
    import sacrebleu

    pairs = [("the cat sat on a mat today", "the cat sat on the mat"),
             ("a b c d e f", "a b c d e f g h i"),
             ("北京 是 中国 的 首都 北京", "北京 是 中国 的 首都")]
    for pred, gold in pairs:
        ref = sacrebleu.corpus_bleu([pred], [[gold]], tokenize="none", smooth_method="none", force=True).score / 100
        assert sentence_bleu4(pred, gold) == pytest.approx(ref, abs=1e-9), (pred, gold)


def test_sacrebleu_sentence_and_corpus():
    import sacrebleu

    assert sacrebleu_sentence("the cat sat on the mat", ["the cat sat on the mat"]) == pytest.approx(1.0)
    pred, golds = "The cat sat on a mat.", ["The cat is on the mat.", "A cat sat on the mat."]
    assert sacrebleu_sentence(pred, golds) == pytest.approx(sacrebleu.sentence_bleu(pred, golds).score / 100, abs=1e-12)
    preds = ["The cat sat on a mat.", "北京是中国的首都", "It rains."]
    refs = [["The cat is on the mat.", "A cat sat on the mat."], ["中国的首都是北京"], ["It is raining."]]
    direct = sacrebleu.corpus_bleu(preds, [[r[0] for r in refs], [refs[0][1], None, None]]).score / 100
    assert corpus_bleu(preds, refs) == pytest.approx(direct, abs=1e-12)
    assert corpus_bleu(["a b c d", "e f g h"], [["a b c d"], ["e f g h"]]) == pytest.approx(1.0)
    zh = item(ZH_PRED, [ZH_GOLD], "zh")
    assert SacreBleu()(zh)["sacrebleu"] == pytest.approx(sacrebleu_sentence(ZH_PRED, [ZH_GOLD], "zh"), abs=1e-12)
    assert SacreBleu()(zh)["sacrebleu"] > SacreBleu(tokenize="13a")(zh)["sacrebleu"]  # 13a sees one word


def test_sentence_bleu_metric_max_over_golds():
    m = SentenceBleu()
    assert m(item("the cat sat on a mat", ["x y", "the cat sat on the mat"])) == {
        "bleu4_sentence": pytest.approx((1 / 12) ** 0.25, abs=1e-12)}
    assert SentenceBleu("auto")(item("北京是中国的首都", ["北京是中国的首都"], "zh"))["bleu4_sentence"] == 1.0


# --- METEOR (NLTK, WordNet from Debian's wordnet-base) -----------------------------------------

def test_meteor_hand_computed():
    # the/stopped match exactly, "auto" is a WordNet synonym of "car": 3 matches in one chunk,
    # P = R = 1, penalty 0.5 * (1/3)^3.
    assert meteor("the car stopped", ["the auto stopped"]) == pytest.approx(1 - 0.5 / 27, abs=1e-12)
    # "cat" matches nothing: P = R = 2/3, Fmean = 2/3, two chunks of two matches, penalty 0.5.
    assert meteor("the cat stopped", ["the auto stopped"]) == pytest.approx(1 / 3, abs=1e-12)
    # NLTK stems before the synonym stage: "automobile" -> "automobil" is no synonym of "car".
    assert meteor("the car stopped", ["the automobile stopped"]) == pytest.approx(1 / 3, abs=1e-12)
    assert meteor("", ["x"]) == 0.0


def test_meteor_chinese_with_jieba_words():
    # 北京/是/中国/的/首都 vs 中国/的/首都/是/北京: all 5 match, aligned (0,4) (1,3) (2,0) (3,1) (4,2):
    # 3 chunks, penalty 0.5 * (3/5)^3 = 0.108.
    assert meteor(ZH_PRED, [ZH_GOLD]) == pytest.approx(0.892, abs=1e-12)
    assert meteor(ZH_PRED, [ZH_GOLD], tokenizer="whitespace") == 0.0


def test_meteor_agrees_with_nltk_documented_value():
    # nltk.translate.meteor_score.single_meteor_score's doctest (NLTK's own WordNet): 0.6944.
    hyp = "It is a guide to action which ensures that the military always obeys the commands of the party"
    ref = "It is a guide to action that ensures that the military will forever heed Party commands"
    assert round(meteor(hyp, [ref], tokenizer="whitespace"), 4) == 0.6944
    assert load_wordnet().get_version() == "3.0"


def test_meteor_metric_and_missing_wordnet(tmp_path):
    m = Meteor()
    assert m(item("the car stopped", ["x", "the auto stopped"])) == {"meteor": pytest.approx(1 - 0.5 / 27)}
    assert math.isnan(m(item(None, ["x"]))["meteor"])
    with pytest.raises(WordNetMissing, match="apt-get install -y wordnet-base"):
        Meteor(wordnet_dir=str(tmp_path))
    with pytest.raises(ConfigError, match="alpha"):
        Meteor(alpha=0)


# --- BERTScore and QA similarity (load the bundled MiniLM) -------------------------------------

def _greedy_bertscore(cand: str, ref: str, layer: int = 6):
    """BERTScore by its definition (Zhang et al. 2020): cosine of layer-``layer`` token
    embeddings, greedy max matching, [CLS]/[SEP] not averaged over (but matchable)."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    from harness.text import bundled_embedder_path

    path = str(bundled_embedder_path())
    tok, model = AutoTokenizer.from_pretrained(path), AutoModel.from_pretrained(path).eval()

    def emb(s):
        with torch.no_grad():
            h = model(**tok(s, return_tensors="pt"), output_hidden_states=True).hidden_states[layer][0]
        return torch.nn.functional.normalize(h, dim=-1)

    sim = emb(cand) @ emb(ref).T
    p, r = sim.max(dim=1).values[1:-1].mean().item(), sim.max(dim=0).values[1:-1].mean().item()
    return p, r, 2 * p * r / (p + r)


@pytest.mark.slow
def test_bertscore_matches_its_definition_and_the_package_rules():
    from harness.metrics.semantic import BertScore

    m = BertScore(model="bundled", num_layers=6)
    for cand, ref in [("the cat sat on the mat", "a cat was sitting on the mat"),
                      ("Paris is the capital of France.", "The capital of France is Paris"),
                      ("naïve café résumé", "a naive cafe resume")]:
        got = m(item(cand, [ref]))
        for key, want in zip(("bertscore_p", "bertscore_r", "bertscore_f1"), _greedy_bertscore(cand, ref)):
            assert got[key] == pytest.approx(want, abs=1e-5), (cand, key)
    assert m(item("the cat", ["a dog", "the cat"]))["bertscore_f1"] == pytest.approx(1.0, abs=1e-6)  # max over golds
    assert m(item("  ", ["x"])) == {"bertscore_p": 0.0, "bertscore_r": 0.0, "bertscore_f1": 0.0}
    assert all(math.isnan(v) for v in m(item(None, ["x"])).values())
    with pytest.raises(ConfigError, match="num_layers"):
        BertScore(model="/some/local/model")
    assert BertScore(model="microsoft/deberta-xlarge-mnli").num_layers == 40  # Qu et al.'s model: bert-score's table


@pytest.mark.slow
def test_qa_similarity_is_the_embedding_cosine():
    from sentence_transformers import SentenceTransformer, util

    from harness.metrics.semantic import QASimilarity
    from harness.embedding.embedder import SentenceTransformerEmbedder
    from harness.text import bundled_embedder_path

    m = QASimilarity(SentenceTransformerEmbedder(model="bundled"))
    question, answer = "What is the capital of France?", "Paris is the capital of France."
    st = SentenceTransformer(str(bundled_embedder_path()), device="cpu")
    want = util.cos_sim(st.encode(question), st.encode(answer)).item()
    assert m(item(answer, [], question=question)) == {"qa_similarity": pytest.approx(want, abs=1e-5)}  # no gold needed
    assert m(item("", ["x"], question=question)) == {"qa_similarity": 0.0}
    assert math.isnan(m(item(None, ["x"], question=question))["qa_similarity"])


# --- configs ---------------------------------------------------------------------------------

@pytest.mark.parametrize("group, names", [
    ("answer", {"rouge_l_py", "rouge_l_google", "bleu4_sentence", "sacrebleu", "meteor", "bertscore", "qa_similarity"}),
    ("longbench", {"longbench"}),
    ("qchunker", {"bleu", "rouge_l", "meteor"}),
])
def test_metric_configs_build_with_the_retrieval_metrics(make_cfg, group, names):
    from harness.pipeline.components import build_component

    cfg = make_cfg(f"metrics={group}")
    built = {name: build_component(node, f"metrics.{name}") for name, node in cfg.metrics.items()}
    assert set(built) == names | {"evidence_recall", "evidence_span_recall", "span_overlap"}
    scores = {k: v for name in names for k, v in built[name](item(None, ["x"])).items()}
    assert scores and all(math.isnan(v) for v in scores.values())  # retrieval-only: NaN under every name
