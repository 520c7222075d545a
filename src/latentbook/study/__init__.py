"""The experiment: which runs the book measures (``runs``) and the verdict table computed from them (``verdict``)."""
