"""Answer templates: the slots, and an answer read between tags (CRUD-RAG's QuestAnswer, QChunker's)."""

import pytest
from omegaconf import OmegaConf

from harness.respond.responder import LLMResponder
from harness.types import ConfigError, Context, Query
from tests.conftest import ScriptedLLM

CONFIG = OmegaConf.to_container(OmegaConf.load("configs/responder/llm.yaml"))


def test_an_answer_between_tags_is_what_the_reply_holds_between_them():
    replies = {"q1": "思考……<response>上海发放了消费券。</response> 其他", "q2": "no tags at all",
               "q3": "<response>first</response><response> last </response>"}
    llm = ScriptedLLM(reply=lambda p: replies[p.split("问题：")[-1].split("\n")[0]])
    responder = LLMResponder(llm, CONFIG["templates"], template="crud_quest_answer")
    qs = [Query(q, q) for q in replies]
    answers = responder.respond(qs, [Context(q.qid, (), "文档", 1) for q in qs], "crud")
    assert [a.text for a in answers] == ["上海发放了消费券。", "no tags at all", "last"]
    assert "检索到的文档：文档" in llm.prompts[0] and "{context}" not in llm.prompts[0]


def test_the_crud_template_is_the_published_prompt_with_chunkbench_slots():
    t = CONFIG["templates"]["crud_quest_answer"]
    assert t["prompt"].startswith("你是一位新闻编辑") and t["prompt"].endswith("请给出你的回答（回答的文本写在<response></response>之间。\n\n")
    assert (t["max_tokens"], t["answer_between"]) == (1280, ["<response>", "</response>"])


@pytest.mark.parametrize("between", [["<a>"], ["", "</a>"], "tag"])
def test_a_bad_answer_between_is_refused_naming_the_template(between):
    templates = {"default": {"prompt": "{context} {input}", "max_tokens": 4, "answer_between": between}}
    with pytest.raises(ConfigError, match="responder.templates.default: .*answer_between"):
        LLMResponder(ScriptedLLM(), templates)
