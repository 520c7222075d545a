"""View wing: numbers -> figures and explorers.

``__all__`` names the public modules: import them as ``from latentbook.view import plots, tables``. The other,
``report_figure``, draws the figure of ``latentbook report``. Nothing is imported here, so ``import latentbook``
stays light (no matplotlib until a figure is drawn).
"""

__all__ = [
    "explorer",
    "explorer_panels",
    "landmark_plots",
    "omega_figures",
    "plots",
    "rg_flow_figures",
    "spectra_plots",
    "static_explorer",
    "tables",
    "thermodynamics_figures",
    "widgets",
]
