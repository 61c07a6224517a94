"""Test servers written from the providers' public specifications only (they import nothing from speceval)."""
