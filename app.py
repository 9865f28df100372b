"""Memory Governance Lab: the router. Page config, the shared sidebar, then the current page.

Run with ``streamlit run app.py``. Pages live in lab/pages/ and are listed in lab.PAGES; the guided lesson
(lab/lesson.py) sits in the sidebar and, while it runs, above the page. The sidebar's
embedder (MiniLM by default) starts loading in a background thread once the first run of the process has drawn its page
(lab.models; a page that needs it starts it sooner), so the model's imports do not slow the first
page, which then waits for the model under a status element.
"""

import streamlit as st

from lab import PAGES, lesson, models
from lab.engine import end_run
from lab.i18n import t
from lab.loading import FOREGROUND, STORE_FAULTS, store_fault_key
from lab.state import render_sidebar, rerun_pending, widget_defaults

# an emoji icon, drawn by the browser: a :material/ page icon is fetched from fonts.gstatic.com (a room without
# internet got a missing icon; tests/test_browser.py)
st.set_page_config(page_title="Memory Governance Lab", page_icon="🧠", layout="wide")
with FOREGROUND.running():  # background loads of other sessions give way while this run draws (lab.loading)
    settings = render_sidebar()
    defaults = widget_defaults(settings.lang)
    lesson.render_sidebar(st.sidebar, defaults)
    try:
        pages = {page.url_path: st.Page(page.file, title=t(page.title_key), icon=page.icon, url_path=page.url_path,
                                        default=page.default) for page in PAGES}
        navigation = st.navigation(list(pages.values()))
        if rerun_pending():  # after st.navigation: the rerun opens this run's page, not the default one
            st.rerun()
        if target := lesson.goto():  # a lesson step or a preset was clicked: its page
            st.switch_page(pages[target], query_params={})  # the bound widgets put their new values back in the URL
        lesson.render_banner(defaults)
        try:
            navigation.run()
        except STORE_FAULTS as exc:  # a full disk or a busy store: a banner, never a traceback or a freeze
            st.error(t(store_fault_key(exc)), icon=":material/error:")
    finally:  # after the page has drawn (or stopped): the model's import would otherwise compete with the page's own
        end_run()  # the room may release this run's lab again, now that no page draws with it
        models.start(settings.embedder)
