"""Report.html: the page and its sections, laid out by `page.py`."""
