"""One module per dashboard panel: widgets and layout only, computation in ``services``."""
