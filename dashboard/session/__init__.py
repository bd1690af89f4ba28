"""This browser session: its session-state keys and their defaults (``state``) and which model
it draws, run by run (``controller``: keeps, fetches or fits it through ``services``).

Two kinds of module (tests/project/test_architecture.py): ``state`` sits below everything that
lays out or decides; ``controller`` sits above the services and below the views.
"""
