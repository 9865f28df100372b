"""Memory Governance Lab: the router. Page config, the shared sidebar, then the current page.

Run with ``streamlit run app.py``. Pages live in pages/ and are listed in lab.PAGES. The default
embedder starts loading in a background thread on the first run of the process (lab.models), so
the first page draws at once and waits for the model under a status element.
"""

import streamlit as st

from lab import PAGES, models
from lab.i18n import t
from lab.state import DEFAULT_EMBEDDER, render_sidebar

models.start(DEFAULT_EMBEDDER)
st.set_page_config(page_title="Memory Governance Lab", page_icon=":material/memory:", layout="wide")
render_sidebar()
st.navigation([
    st.Page(page.path, title=t(page.title_key), icon=page.icon, url_path=page.url_path, default=page.default)
    for page in PAGES
]).run()
