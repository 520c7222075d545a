"""The paper's numbers that more than one analysis splits or judges by (book/paper.md), defined once."""

PAPER_GAMMA_C = 0.42  # the critical depth gamma_c the paper reports: the split between early and late depths
