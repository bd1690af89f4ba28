"""Running the dashboard's server: its start (``serve``: the pool of fit workers up before
Streamlit listens, shut down after) and the bytecode written at install (``precompile``).
"""
