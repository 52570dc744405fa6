"""Check the built documentation site offline: every internal link and anchor resolves.

    python scripts/check_links.py [docs/_build/html]

Reads every HTML page of the site and checks

* each relative link (``href``, ``src``) names a file of the site, and its ``#anchor`` (or a
  same-page ``#anchor``) an ``id`` (or ``<a name>``) of that page;
* no page loads a script, stylesheet, image or frame from the network (the site is read
  offline: no CDN); links *to* other sites are allowed, and not visited;
* each API page (``api/generated/``) documents its name (autodoc rendered a signature).

Prints each problem as ``page: link: what is wrong`` and exits with status 1 if there is
one. Sphinx's own ``linkcheck`` builder is not used: it visits external links on the network.
"""

from __future__ import annotations

import argparse
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

#: Attributes that load a resource into the page (a remote one would need the network).
LOADING = {("script", "src"), ("link", "href"), ("img", "src"), ("iframe", "src"), ("source", "src"), ("video", "src")}
#: ``<link rel=...>`` values that only name a page (not loaded to show this one).
NAMING_RELS = {"canonical", "alternate", "author", "license", "next", "prev", "index", "search", "help", "copyright"}


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[tuple[str, str, str]] = []  # (tag, attribute, value)
        self.signatures = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v for k, v in attrs if v is not None}
        for key in ("id",):
            if key in values:
                self.ids.add(values[key])
        if tag == "a" and "name" in values:
            self.ids.add(values["name"])
        if tag == "dt" and "sig" in values.get("class", "").split():
            self.signatures += 1
        if tag == "link" and NAMING_RELS & set(values.get("rel", "").split()):
            return
        for attribute in ("href", "src"):
            if attribute in values:
                self.links.append((tag, attribute, values[attribute]))


def check(site: Path) -> list[str]:
    pages: dict[Path, _Page] = {}
    for path in sorted(site.rglob("*.html")):
        parser = _Page()
        parser.feed(path.read_text(encoding="utf-8"))
        pages[path.resolve()] = parser
    if not pages:
        return [f"{site}: no HTML pages (build the site first: bash scripts/docs.sh)"]
    problems: list[str] = []
    for path, page in pages.items():
        where = path.relative_to(site.resolve())
        for tag, attribute, value in page.links:
            parts = urlsplit(value)
            if parts.scheme or parts.netloc:
                if (tag, attribute) in LOADING and parts.scheme in ("http", "https", ""):
                    problems.append(f"{where}: {value}: loaded from the network (the site must read offline)")
                continue  # mailto:, a link to another site: not visited
            target = path if not parts.path else (path.parent / unquote(parts.path)).resolve()
            if parts.path and target.is_dir():
                target = target / "index.html"
            if not target.exists():
                problems.append(f"{where}: {value}: no such file")
                continue
            if parts.fragment and target.suffix == ".html":
                anchor = unquote(parts.fragment)
                if anchor not in pages[target].ids:
                    problems.append(f"{where}: {value}: no anchor #{anchor} in {target.relative_to(site.resolve())}")
        if where.parts[:2] == ("api", "generated") and page.signatures == 0:
            problems.append(f"{where}: documents nothing (no signature: did autodoc fail?)")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Check the built site's internal links and anchors, offline.")
    parser.add_argument("site", nargs="?", default="docs/_build/html", type=Path)
    args = parser.parse_args(argv)
    problems = check(args.site)
    for line in problems:
        print(line)
    pages = sum(1 for _ in args.site.rglob("*.html"))
    print(f"check_links: {pages} pages, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
