"""Floor of ``bench_ui.py --floors``: Streamlit alone, no map, no chart.

A Swap button in a fragment changes one line of text: the least a swap can cost in this
browser (a websocket round trip, a fragment rerun, React applying two elements).
"""

import streamlit as st

COUNT = "floor_swaps"


@st.fragment
def section() -> None:
    st.session_state.setdefault(COUNT, 0)
    if st.button("Swap"):
        st.session_state[COUNT] += 1
    st.code(f"A trip typically takes {10 + st.session_state[COUNT] % 2} min.", language=None)


section()
