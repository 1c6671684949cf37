"""The tests' helpers, imported by name (``from helpers import where``); no test module lives here."""
