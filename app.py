"""Memory Governance Lab: the router. Page config, the shared sidebar, then the current page.

Run with ``streamlit run app.py``. Pages live in pages/ and are listed in lab.PAGES.
"""

import streamlit as st

from lab import PAGES
from lab.i18n import t
from lab.state import render_sidebar

st.set_page_config(page_title="Memory Governance Lab", page_icon=":material/memory:", layout="wide")
render_sidebar()
st.navigation([
    st.Page(page.path, title=t(page.title_key), icon=page.icon, url_path=page.url_path, default=page.default)
    for page in PAGES
]).run()
