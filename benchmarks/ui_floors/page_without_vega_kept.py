"""Floor of ``bench_ui.py --floors``: the page with no Vega-Lite view, answers computed before.

``page_without_vega.py`` (the Predict page, each Vega-Lite view an empty box) with each
trip's answer already computed once in this server process (:mod:`_kept_answers`): what
Streamlit's own elements cost with no work of ours on the server.
"""

import runpy
from pathlib import Path

from _kept_answers import keep_answers

keep_answers()
runpy.run_path(str(Path(__file__).with_name("page_without_vega.py")), run_name="__main__")
