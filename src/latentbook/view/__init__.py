"""View wing: numbers -> figures and explorers."""
