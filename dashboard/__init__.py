"""Streamlit dashboard for levy_core: ``streamlit run dashboard/app.py`` (or ``levy dashboard``)."""
