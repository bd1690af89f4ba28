"""The fit, under the services: what to fit and what was fitted (``fits``: the settings, the
result, the process-wide fit store), the server's pool of fit worker processes
(``fit_pool``) and how a fit in it is cancelled (``fit_cancel``), a model saved to a zip and
opened again (``saved_models``), and the models shipped with the samples (``shipped``).

``services.fit`` wraps these for the views; which model a session draws is decided by
``session.controller``. Nothing here builds a figure or lays out a widget.
"""
