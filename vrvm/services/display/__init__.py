"""How values are shown: numbers as text, units, user text made inert, safe CSV cells.

Every door shows values the same way: :mod:`~vrvm.services.display.formatting` (numbers as
short text in links, file names and columns), :mod:`~vrvm.services.display.units` (the
label and unit of every score), :mod:`~vrvm.services.display.text` (user text made inert
before Markdown), :mod:`~vrvm.services.display.csv_cells` (CSV cells that cannot run as
formulas), :mod:`~vrvm.services.display.colours` (palettes, binned fills, legends) and
:mod:`~vrvm.services.display.progress` (what a progress report says, with time left).
Imports nothing of the other services.
"""
