"""The command line: `speceval …` and the `batched_examples` scripts, thin layers over the library."""
