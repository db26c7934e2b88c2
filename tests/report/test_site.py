"""``chunkbench site`` (harness.report.site): the pages of a small results tree, every link resolving to a
file on disk, every text escaped, the same bytes for the same files; the repository's own results/;
and the pages in a real headless browser (Debian's chromium: `make test` installs it as root, else
those tests skip), which runs the sort script and takes a screenshot of the index."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from harness.report.site import build, links, render
from harness.report.site.templates import page, table
from harness.types import ConfigError

REPO = Path(__file__).resolve().parents[2]
RUN_ID = "0123456789abcdef0123456789abcdef"
EVIL = "<script>alert('x')</script> & \"quoted\""
PNG = bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c63f8cf"
                    "c0f01f0005000201a5f6a8d00000000049454e44ae426082")  # 1x1 pixel
HEADER = "row,column,ours,ci95_low,ci95_high,std,n_runs,paper,paper_std,diff,best_at,note,not_comparable\n"


def write(root: Path, rel: str, text: str | bytes) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text) if isinstance(text, bytes) else path.write_text(text, encoding="utf-8")


def table_md(title: str) -> str:
    return (f"# demo/table1: {title}\n\nSource: a paper, Table 1. Scale: **smoke**. {EVIL}\n"
            f"Runs: mlflow run {RUN_ID}; the sweep in `sensitivity/demo/table1/<reading>`.\n\n"
            "|  | A | B |\n|---|---|---|\n| fixed | 1.0<br>paper 2.0 | 3.0 |\n| semantic | 9.0 | 10.0 |\n\n"
            "See [the paper numbers](../papers/demo/table1.csv), [the web](https://example.org) and [a folder](../papers).\n")


def results_tree(root: Path, leaderboard: bool = True) -> Path:
    """A small results/ in the layout `tables render` and `challenge` write."""
    write(root, "README.md", "# Results\n\n**3 of 4 cells filled** in 2 tables at smoke scale.\n\n"
                             "Full scale: [full/README.md](full/README.md); numbers in [papers/](papers/).\n\n## Paper tables\n")
    write(root, "index.json", json.dumps({"tables": [
        {"table": "demo/table1", "title": f"Demo {EVIL}", "scale": "smoke", "filled": 3, "total": 4, "figure": False,
         "stand_ins": "all-MiniLM-L6-v2", "why_empty": "1: not built", "computed": 12.5, "reused": 1.0,
         "commit": "abc1234", "date": "2026-11-28"},
        {"table": "demo/figure1", "title": "A figure", "scale": "smoke", "filled": 1, "total": 1, "figure": True,
         "stand_ins": "none", "why_empty": "none", "computed": 1, "reused": 0, "commit": "abc1234", "date": "2026-11-28"}]}))
    write(root, "demo/table1.md", table_md(f"Demo {EVIL}"))
    write(root, "demo/table1.csv", HEADER +
          "fixed,a/x,1.000000,0.5,1.5,0.2,1,2.0,,,,,bundled all-MiniLM-L6-v2\n"
          "semantic,a/x,9.000000,8.5,9.5,0.2,1,9.5,,-0.5,,,\n"
          "fixed,a/y,100.000000,99,101,1,1,3.0,,,,,\"bundled all-MiniLM-L6-v2, chunker.llm\"\n"
          f"semantic,a/y,,,,,,10.0,,,,{EVIL},\n")
    write(root, "demo/table1.tex", "\\begin{tabular}\\end{tabular}\n")
    write(root, "demo/figure1.md", "# demo/figure1: A figure\n\nA plot.\n")
    write(root, "demo/figure1.csv", HEADER + "fixed,a/x,1.0,,,,1,,,,,,\n")
    write(root, "demo/figure1.png", PNG)
    write(root, "demo/figure1_extra.csv", "group,lambda,pearson_r\ncrud,0,-0.4\n")
    write(root, "full/README.md", "# Results\n\n**1 of 2 cells filled** at full scale. Smoke: [../README.md](../README.md).\n")
    write(root, "full/index.json", json.dumps({"tables": [{"table": "demo/table1", "title": "Demo", "scale": "full",
                                                           "filled": 1, "total": 2}]}))
    write(root, "full/demo/table1.md", table_md("Demo"))
    write(root, "full/demo/table1.csv", HEADER + "fixed,a/x,1.0,,,,1,2.0,,-1.0,,,\n")
    write(root, "pareto/ds.csv", f"# dataset: Dataset {EVIL}\n# quality: evidence_recall\n"
                                 "chunker,evidence_recall,chunk_seconds_per_doc,pareto,tables\nFixed,0.5,0.01,1,demo/table1\n")
    write(root, "pareto/ds.png", PNG)
    write(root, "challenges/mine/v1/README.md",
          f"# Challenge: mine\n\n| table | verdict |\n|---|---|\n| [demo/table1](tables/demo/table1.md) | win {EVIL} |\n\n"
          "![plot](pareto/ds.png) and [missing](tables/none.md)\n")
    write(root, "challenges/mine/v1/tables/demo/table1.md", table_md("Challenged"))
    write(root, "challenges/mine/v1/tables/demo/table1.csv", HEADER + "mine,a/x,5.0,,,,1,,,,,,\n")
    write(root, "challenges/mine/v1/pareto/ds.png", PNG)
    write(root, "performance.md", "# Chunking speed\n\nFast.\n")
    write(root, "papers/demo/table1.csv", "# A paper, Table 1\nrow,column,value\nfixed,a/x,2.0\n")
    if leaderboard:
        write(root, "leaderboard/README.md", f"# Leaderboard\n\nChunkers ranked. {EVIL}\n")
        write(root, "leaderboard/leaderboard.csv", "rank,chunker,score\n2,semantic,0.61\n10,fixed,0.5\n1,mine,0.7\n")
    return root


@pytest.fixture
def results(tmp_path) -> Path:
    return results_tree(tmp_path / "results")


def test_every_page_exists_and_every_link_resolves_to_a_file(results, tmp_path):
    built = build(results, tmp_path / "site")
    site = built.out
    for rel in ("index.html", "demo/table1.html", "demo/figure1.html", "full/demo/table1.html", "pareto/ds.html",
                "challenges/mine/v1/README.html", "challenges/mine/v1/tables/demo/table1.html", "performance.html",
                "leaderboard/README.html", "demo/figure1.png", "demo/table1.csv", "papers/demo/table1.csv"):
        assert (site / rel).is_file(), rel
    assert built.broken == ()
    n = 0
    for html_file in site.rglob("*.html"):  # the checker's verdict, checked by hand; ids unique (#sort=ID)
        ids = re.findall(r' id="([^"]+)"', html_file.read_text())
        assert len(ids) == len(set(ids)), html_file
        for ref in links.references(html_file):
            path = ref.split("#")[0]
            assert not re.match(r"^[a-z]+:", ref) and not ref.startswith("/"), ref
            assert (html_file.parent / path).resolve().is_file(), (html_file, ref)
            n += 1
    assert n > 30
    index = (site / "index.html").read_text()
    assert 'href="demo/table1.html"' in index and 'href="full/demo/table1.html"' in index
    assert 'href="challenges/mine/v1/README.html"' in index and 'href="leaderboard/README.html"' in index
    report = (site / "challenges/mine/v1/README.html").read_text()
    assert 'href="tables/demo/table1.html"' in report and 'src="pareto/ds.png"' in report
    assert 'title="not in the site: tables/none.md"' in report  # a missing target stays text
    page1 = (site / "demo/table1.html").read_text()
    assert "https://example.org" not in page1.split("not in the site: ")[0]  # no link to the web
    assert 'href="../papers/demo/table1.csv"' in page1
    assert 'href="../index.html#smoke"' in page1  # back to the index


def test_the_checker_finds_what_does_not_resolve(tmp_path):
    write(tmp_path, "index.html", '<a href="a.html#nowhere">x</a><a href="missing.png">y</a><img src="https://cdn.x/y.png">'
                                  '<a href="../out.html">z</a><a href="/etc/passwd">w</a><a href="#top">t</a>')
    write(tmp_path, "a.html", '<p id="here">a</p>')
    whys = {b.target: b.why for b in links.check(tmp_path)}
    assert set(whys) == {"a.html#nowhere", "missing.png", "https://cdn.x/y.png", "../out.html", "/etc/passwd", "#top"}
    assert "web address" in whys["https://cdn.x/y.png"] and "no id" in whys["a.html#nowhere"]


def test_a_table_page_sets_ours_beside_the_paper_with_stand_ins_deviations_caption_figure_and_runs(results, tmp_path):
    site = build(results, tmp_path / "site").out
    text = (site / "demo/table1.html").read_text()
    assert "Source: a paper, Table 1." in text  # the caption, from the .md
    assert '<span class="tag stand-in">bundled all-MiniLM-L6-v2</span>' in text
    assert '<span class="tag deviation">chunker.llm</span>' in text
    row = re.search(r"<tr><td>semantic</td><td>a/x</td>.*?</tr>", text).group(0)
    assert ">9.00<" in row and ">9.50<" in row and ">-0.50<" in row  # ours, the paper's, ours - paper
    assert RUN_ID in text and "mlflow ui --backend-store-uri sqlite:///mlruns.db" in text
    assert "tables/demo/table1" in text and "sensitivity/demo/table1/&lt;reading&gt;" in text
    assert "http://" not in text and "https://" not in text.replace("not in the site: https://example.org", "")
    figure = (site / "demo/figure1.html").read_text()
    assert '<img class="figure" src="figure1.png"' in figure and "figure1_extra.csv" in figure
    pareto = (site / "pareto/ds.html").read_text()
    assert '<a href="../demo/table1.html">demo/table1</a>' in pareto


def test_every_text_is_escaped(results, tmp_path):
    site = build(results, tmp_path / "site").out
    for html_file in site.rglob("*.html"):
        text = html_file.read_text()
        assert "<script>alert" not in text, html_file
        assert text.count("<script>") == 1, html_file  # the sort script, nothing else
    for rel in ("index.html", "demo/table1.html", "pareto/ds.html", "leaderboard/README.html",
                "challenges/mine/v1/README.html"):
        assert "&lt;script&gt;alert(" in (site / rel).read_text(), rel


def test_the_same_files_give_the_same_bytes(results, tmp_path):
    a = build(results, tmp_path / "a").out
    b = build(results, tmp_path / "b").out
    files = sorted(p.relative_to(a).as_posix() for p in a.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b).as_posix() for p in b.rglob("*") if p.is_file())
    assert all((a / f).read_bytes() == (b / f).read_bytes() for f in files)
    assert render(results)[0] == render(results)[0]


def test_the_leaderboard_is_shown_when_published_and_said_absent_when_not(tmp_path):
    with_board = build(results_tree(tmp_path / "r1"), tmp_path / "s1").out
    index = (with_board / "index.html").read_text()
    assert "<th>rank</th><th>chunker</th><th>score</th>" in index and "<td>mine</td>" in index
    assert "leaderboard.csv" in (with_board / "leaderboard/README.html").read_text()
    without = build(results_tree(tmp_path / "r2", leaderboard=False), tmp_path / "s2").out
    assert "Not published yet" in (without / "index.html").read_text()
    assert not (without / "leaderboard").exists()


def test_the_site_folder_is_replaced_whole_and_never_a_foreign_one(results, tmp_path):
    out = results / "site"  # the default, inside results/: never read as published
    assert build(results).out == out
    (out / "stale.html").write_text("old")
    build(results)
    assert not (out / "stale.html").exists() and not (out / "site").exists()
    foreign = tmp_path / "mine"
    write(foreign, "notes.txt", "keep me")
    with pytest.raises(ConfigError, match="not a site"):
        build(results, foreign)
    assert (foreign / "notes.txt").read_text() == "keep me"


def test_the_command(results, tmp_path, capsys):
    from harness.cli import main

    main(["site", "--results", str(results), "--out", str(tmp_path / "out")])
    assert "pages" in capsys.readouterr().out and (tmp_path / "out/index.html").is_file()


@pytest.fixture(scope="module")
def real_site(tmp_path_factory):
    """The site of the repository's own results/ (read only; written to a temporary folder)."""
    out = tmp_path_factory.mktemp("real") / "site"
    before = sorted(p.relative_to(REPO / "results").as_posix() for p in (REPO / "results").rglob("*"))
    built = build(REPO / "results", out)
    assert sorted(p.relative_to(REPO / "results").as_posix() for p in (REPO / "results").rglob("*")) == before
    return built


def test_the_repository_results_give_a_site_whose_every_link_resolves(real_site):
    assert real_site.broken == ()
    index_html = (real_site.out / "index.html").read_text()
    for scale, folder in (("smoke", ""), ("full", "full/")):
        index = REPO / "results" / folder / "index.json"
        if index.is_file():
            for entry in json.loads(index.read_text())["tables"]:
                if (REPO / "results" / f"{folder}{entry['table']}.md").is_file():
                    assert f"{folder}{entry['table']}.html" in real_site.pages, entry["table"]
                else:  # indexed, never rendered at this scale: named on the index
                    assert f">{entry['table']}<" in index_html
    assert "index.html" in real_site.pages


# --- a real headless browser -------------------------------------------------------------------

CHROMIUM = shutil.which("chromium")
browser = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed: `make test` installs Debian's "
                                                      "chromium when run as root with apt-get (make chromium); "
                                                      "else: sudo apt-get install chromium")


def chromium(tmp_path: Path, *args: str) -> str:
    profile = tmp_path / f"chromium-profile-{len(list(tmp_path.glob('chromium-profile-*')))}"
    done = subprocess.run([CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox", f"--user-data-dir={profile}",
                           "--no-first-run", *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def rows(dom: str, table_id: str) -> list[list[str]]:
    body = re.search(rf'<table id="{table_id}".*?<tbody>(.*?)</tbody>', dom, re.S).group(1)
    return [[re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)]
            for tr in re.findall(r"<tr>(.*?)</tr>", body, re.S)]


@browser
def test_the_browser_shows_the_rows_and_the_sort_orders_numbers_and_text(results, tmp_path):
    site = build(results, tmp_path / "site").out
    dom = chromium(tmp_path, "--dump-dom", (site / "demo/table1.html").as_uri())
    assert [r[:2] for r in rows(dom, "cells")] == [["fixed", "a/x"], ["semantic", "a/x"], ["fixed", "a/y"],
                                                  ["semantic", "a/y"]]
    # sorted on load by the address (#sort=TABLE:COLUMN[:desc]): ours, highest first, the empty cell last
    dom = chromium(tmp_path, "--dump-dom", (site / "demo/table1.html").as_uri() + "#sort=cells:2:desc")
    assert [r[2] for r in rows(dom, "cells")] == ["100.00", "9.00", "1.00", "—"]
    assert 'data-sorted="2:desc"' in dom and re.search(r'<th[^>]*class="desc">ours</th>', dom)
    # a small page: numbers numerically (10 after 9, not after 1), text alphabetically, empty last
    values = [("10", "beta"), ("9", "Alpha"), ("100", "gamma"), ("", ""), ("1,500 s", "alpha2"), ("−3", "delta")]
    write(tmp_path, "sort.html", page("sort.html", "sort", table("t", ["n", "name"], values)))
    dom = chromium(tmp_path, "--dump-dom", (tmp_path / "sort.html").as_uri() + "#sort=t:0")
    assert [r[0] for r in rows(dom, "t")] == ["−3", "9", "10", "100", "1,500 s", ""]
    dom = chromium(tmp_path, "--dump-dom", (tmp_path / "sort.html").as_uri() + "#sort=t:1")
    assert [r[1] for r in rows(dom, "t")] == ["Alpha", "alpha2", "beta", "delta", "gamma", ""]
    board = chromium(tmp_path, "--dump-dom", (site / "index.html").as_uri() + "#sort=leaderboard-table:0")
    assert [r[1] for r in rows(board, "leaderboard-table")] == ["mine", "semantic", "fixed"]


@browser
def test_a_screenshot_of_the_index(real_site, tmp_path):
    shot = tmp_path / "index.png"
    chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,1000", (real_site.out / "index.html").as_uri())
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", data[16:24]) == (1280, 1000)
    assert len(data) > 20_000  # a page of text and tables, not a blank one
    print(f"index screenshot: {shot} ({len(data):,} bytes)")
    dom = chromium(tmp_path, "--dump-dom", (real_site.out / "index.html").as_uri())
    assert dom.count("<tr>") > 40 and "Paper tables and figures, smoke scale" in dom
