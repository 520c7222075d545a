"""Calibration records and cached captures go stale when the code they ran on changes what it computes, and only
then: a docstring, a comment or a blank line keeps them."""

from latentbook._code_hash import code_hash, code_text

SOURCE = '''
"""A module."""

LIMIT = 3  # a comment


def f(x, y=2):
    """Add.

    More words.
    """
    total = x + y
    return total * LIMIT


class Box:
    """A box."""

    size = "10"  # not a docstring
'''


def test_docstrings_comments_and_blank_lines_do_not_change_the_text():
    reworded = (
        SOURCE.replace('"""Add.\n\n    More words.\n    """', "'''Add, reworded.'''")
        .replace("# a comment", "# another")
        .replace('"""A box."""', '"""A box that holds things."""')
        .replace("def f(x, y=2):", "def f(x, y=2):   \n\n")
    )
    assert code_text(reworded) == code_text(SOURCE)


def test_every_change_of_what_the_code_computes_changes_the_text():
    nested = SOURCE + "\nif LIMIT:\n    x = 1\n    y = 2\n"
    changed = [
        SOURCE.replace("LIMIT = 3", "LIMIT = 4"),
        SOURCE.replace("x + y", "y + x"),
        SOURCE.replace('size = "10"', 'size = "11"'),  # a string that is not a docstring counts
        SOURCE.replace("    return total * LIMIT", "    return total\n    return total * LIMIT"),
        nested,
        nested.replace("    y = 2", "y = 2"),  # indentation is code
    ]
    texts = [code_text(source) for source in [SOURCE, *changed]]
    assert len(set(texts)) == len(texts)


def test_code_hash_reads_each_part_and_the_constants():
    def one(x):
        """Once."""
        return x + 1

    def two(x):
        return x + 2

    assert len(code_hash([one])) == 64
    assert code_hash([one]) != code_hash([one], extra="(1,)")
    assert code_hash([one]) != code_hash([two]) and code_hash([one, two]) != code_hash([two, one])


def _fake_package(root):
    """A package ``latentbook`` with a producer that imports one module at the top and one inside a function,
    through a package's ``__init__`` that re-exports a name, and a module nobody imports."""
    package = root / "latentbook"
    (package / "wing").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "errors.py").write_text("class Error(Exception):\n    pass\n")
    (package / "wing" / "__init__.py").write_text("from .helper import add_one\n")
    (package / "wing" / "helper.py").write_text("def add_one(x):\n    return x + 1\n")
    (package / "wing" / "lazy.py").write_text("from .. import errors\n\ndef lazy():\n    return 2\n")
    (package / "wing" / "unused.py").write_text("def unused():\n    return 3\n")
    (package / "producer.py").write_text(
        '"""Makes a record."""\n\nfrom .wing import add_one\n\n\ndef run():\n    from .wing import lazy\n\n'
        "    return add_one(lazy.lazy())\n"
    )
    return package


def test_a_record_hash_changes_when_and_only_when_a_module_its_producer_imports_changes(
    tmp_path, monkeypatch
):
    from latentbook import _code_hash

    package = _fake_package(tmp_path)
    monkeypatch.setattr(_code_hash, "_PACKAGE_ROOT", package)
    before = _code_hash.module_hashes("latentbook.producer")
    assert (
        set(before)
        == {
            "latentbook.producer",
            "latentbook.wing",  # ``from .wing import add_one``: a name, so the package, and what its __init__ imports
            "latentbook.wing.helper",
            "latentbook.wing.lazy",  # imported inside a function
            "latentbook.errors",  # through lazy
        }
    )
    assert _code_hash.stale_because(before, before) is None

    def edited(path, old, new):
        text = path.read_text()
        path.write_text(text.replace(old, new))
        after = _code_hash.module_hashes("latentbook.producer")
        path.write_text(text)
        return _code_hash.stale_because(before, after)

    # Changes to what the producer runs, however deep: stale, naming the module.
    assert edited(package / "wing" / "helper.py", "x + 1", "x + 2") == "stale: latentbook.wing.helper changed"
    assert edited(package / "errors.py", "pass", "code = 1") == "stale: latentbook.errors changed"
    assert (
        edited(package / "producer.py", "lazy.lazy()", "lazy.lazy() + 1")
        == "stale: latentbook.producer changed"
    )
    # A module it no longer imports counts as a change.
    assert edited(package / "wing" / "lazy.py", "from .. import errors\n", "") == (
        "stale: latentbook.errors, latentbook.wing.lazy changed"
    )
    # Not imported, or only docstrings and comments: current.
    assert edited(package / "wing" / "unused.py", "return 3", "return 4") is None
    assert edited(package / "producer.py", '"""Makes a record."""', '"""Makes a record, reworded."""') is None
    assert (
        edited(package / "wing" / "helper.py", "    return x + 1", "    # one more\n    return x + 1") is None
    )
    assert _code_hash.digest(before) != _code_hash.digest({**before, "latentbook.errors": "0"})
    assert _code_hash.stale_because(None, before) == "stale: recorded without the hashes of its modules"


def test_a_stale_reason_names_three_modules_and_counts_the_rest():
    from latentbook._code_hash import stale_because

    now = {f"latentbook.m{i}": "new" for i in range(5)}
    assert stale_because(dict.fromkeys(now, "old"), now) == (
        "stale: latentbook.m0, latentbook.m1, latentbook.m2 and 2 more changed"
    )
