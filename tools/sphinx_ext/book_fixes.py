"""Two fixes to the pages Sphinx 7.4 + sphinx-book-theme write, so the browser console stays clean.

1. sphinx-thebe's inline setup script is added to each page twice (``THEBE_JS_URL`` declared twice: a
   SyntaxError in the console): keep each script file once.
2. An empty ``default_mode`` makes the theme log "invalid theme mode" on a reader's first visit: use "auto".
"""


def _page(app, pagename, templatename, context, doctree):
    if not context.get("default_mode"):
        context["default_mode"] = "auto"
    seen, kept = set(), []
    for script in context.get("script_files", []):
        key = (
            getattr(script, "filename", None) or "",
            tuple(sorted(getattr(script, "attributes", {}).items())),
        )
        if key not in seen:
            seen.add(key)
            kept.append(script)
    context["script_files"] = kept


def setup(app):
    app.connect("html-page-context", _page, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
