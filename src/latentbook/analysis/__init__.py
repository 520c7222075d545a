"""Analysis wing: Capture or arrays -> numbers. Never loads a model.

``__all__`` names the public modules: import them as ``from latentbook.analysis import omega, spectra``. The
others (``cloud_families``, ``planted_statistics``, ``ridge_probe``) are helpers of the public ones. Nothing is
imported here, so ``import latentbook`` stays light.
"""

__all__ = [
    "bimodality",
    "bimodality_power",
    "bulk_fit",
    "calibration",
    "classes",
    "code_calibration",
    "confounds",
    "contraction",
    "cooling",
    "flow",
    "interval_coverage",
    "intrinsic_dimension",
    "jump_power",
    "landmarks",
    "layer_spectra",
    "learned_basis",
    "mp_law",
    "omega",
    "omega_profiles",
    "paper",
    "prototypes",
    "ranks",
    "resampling",
    "spectra",
    "spectral_contrasts",
    "standardisation",
    "stream",
    "synthetic",
    "tco",
    "thermo",
    "transition",
    "verdict",
]
