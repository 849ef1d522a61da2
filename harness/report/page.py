"""The report page: a Jinja2 template (``templates/report.html``, autoescaped) with the
stylesheet and the script from ``static/``, inlined so the page has no external
resource and opens from ``file://`` as one file plus its data folder.

Fragments the Python side builds (tables, SVG charts) are escaped where they are made
and handed to the template as :class:`markupsafe.Markup`; every other value the
template prints is escaped by it.
"""

from __future__ import annotations

import html
from functools import lru_cache
from pathlib import Path
from typing import Any

_HERE = Path(__file__).parent


def esc(text: Any) -> str:
    """``text`` escaped for HTML, quotes too: how every fragment the Python side builds escapes its values."""
    return html.escape(str(text), quote=True)


@lru_cache(maxsize=None)
def static(name: str) -> str:
    """A file of ``static/`` (the stylesheet, the script)."""
    return (_HERE / "static" / name).read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def _environment() -> Any:
    import jinja2

    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(_HERE / "templates")),
                              autoescape=jinja2.select_autoescape(("html",)), keep_trailing_newline=True,
                              undefined=jinja2.StrictUndefined)


def render_page(*, sections: list[str], runs: str, data_json: str, search_json: str, **context: Any) -> str:
    """The whole page. ``sections`` and ``runs``: HTML built (and escaped) by the report;
    ``data_json`` and ``search_json``: the page's data and its search index, already safe
    inside a <script> element."""
    from markupsafe import Markup

    return _environment().get_template("report.html").render(
        sections=[Markup(s) for s in sections], runs=Markup(runs), data=Markup(data_json), search=Markup(search_json),
        css=Markup(static("report.css")), script=Markup(static("report.js")), **context)
