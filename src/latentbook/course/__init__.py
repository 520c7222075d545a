"""Self-checks for the labs in ``notebooks/``: one ``check_<exercise>(your_function)`` per exercise.

    from latentbook.course import lab1
    lab1.check_free_energy(free_energy)   # prints "All tests passed: free_energy." or a hint

Each check runs fixed cases against the reference solution (``checking.run``) and returns a ``Result``,
truthy when everything passed. ``lab1``: attention thermodynamics; ``lab2``: Omega; ``lab3``: spectra;
``lab4``: mixtures and Transient Class Objects.
"""

from . import lab1, lab2, lab3, lab4
from .checking import Result

__all__ = ["Result", "checking", "lab1", "lab2", "lab3", "lab4"]
