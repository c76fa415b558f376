"""Can a page's text tell that a generator wrote it? hugodocs' 44 command pages are cobra's output
(Synopsis / Options / SEE ALSO); its other pages are written by hand. Two text signals, per set with page
text: the share of a page's word 5-grams found on 3 or more other pages (but not on most of the site: a
template), and folders of 8 or more pages whose pages nearly all share phrases rare elsewhere. The
`generated_pages` setting's default (none) rests on this table.

    python -m benchmarks.bench_generated_pages [--sets hugodocs cppdocs cpwiki]
"""

from __future__ import annotations

import argparse
import re
from collections import Counter, defaultdict
from urllib.parse import urlsplit

import polars as pl

from benchmarks.harness import SHARED_CRAWLS, print_table, save

TEXTS = {
    "hugodocs": ("page_text.csv", "/commands/"),
    "cppdocs": ("page_text.csv.gz", None),
    "cpwiki": ("page_text.csv.gz", None),
}
SHINGLE = 5  # words
SHARED_BY = 3  # other pages at least
FOLDER_PAGES = 8  # a folder this large or larger is judged
FOLDER_SHARE = 0.8  # a phrase on this share of a folder's pages ...
ELSEWHERE = 0.05  # ... and on under this share of the other pages


def _shingles(text: str) -> set[tuple[str, ...]]:
    words = re.findall(r"\w+", text.lower())
    return {tuple(words[i : i + SHINGLE]) for i in range(len(words) - SHINGLE + 1)}


def _folder(url: str) -> str:
    parts = urlsplit(url).path.strip("/").split("/")
    return "/".join(parts[:-1])


def measure(name: str) -> dict:
    file, generated = TEXTS[name]
    frame = pl.read_csv(SHARED_CRAWLS / name / file, infer_schema=False).fill_null("")
    docs = {url: _shingles(text) for url, text in frame.select("Address", "Text").rows()}
    docs = {url: shingles for url, shingles in docs.items() if shingles}
    pages = len(docs)
    found = Counter(s for shingles in docs.values() for s in shingles)
    share = {
        url: sum(SHARED_BY + 1 <= found[s] <= pages / 2 for s in shingles) / len(shingles)
        for url, shingles in docs.items()
    }
    folders = defaultdict(list)
    for url in docs:
        folders[_folder(url)].append(url)
    marked = []
    for folder, members in folders.items():
        if len(members) < FOLDER_PAGES:
            continue
        inside = Counter(s for url in members for s in docs[url])
        others = pages - len(members)
        phrases = [
            s
            for s, n in inside.items()
            if n >= FOLDER_SHARE * len(members) and found[s] - n < ELSEWHERE * others
        ]
        if phrases:
            marked.append(f"/{folder}/ ({len(members)})")
    is_generated = {url: bool(generated) and generated in url for url in docs}
    mostly = [url for url, value in share.items() if value > 0.5]
    generated_share = sorted(value for url, value in share.items() if is_generated[url])
    return {
        "set": name,
        "pages with text": pages,
        "generated (known)": sum(is_generated.values()),
        "median share, generated": round(generated_share[len(generated_share) // 2], 2)
        if generated_share
        else None,
        "mostly shared (> 0.5)": len(mostly),
        "of them generated": sum(is_generated[url] for url in mostly),
        "folders sharing phrases": ", ".join(marked[:6]) + (f" … ({len(marked)})" if len(marked) > 6 else ""),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=list(TEXTS), choices=list(TEXTS))
    measured = {name: measure(name) for name in parser.parse_args().sets}
    header = list(next(iter(measured.values())))
    print_table(
        "Can the text tell a generator's pages?", [list(m.values()) for m in measured.values()], header
    )
    save("generated_pages", measured)


if __name__ == "__main__":
    main()
