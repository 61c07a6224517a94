"""The `speceval` subcommands, one module each (`register` adds its parser, its handler runs it); the shared console,
exit codes and the original-compatible `run_batched_*` scripts stay in `speceval.cli`."""
