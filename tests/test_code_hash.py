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
