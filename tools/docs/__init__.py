"""The command output the README and docs/ show as real, rendered from a real run of `saga local`
(`python -m tools.docs`, or `make docs`): blocks.py finds and rewrites the marked blocks and normalizes
what may differ between runs, session.py runs the local runtime and a shell against it, scenes.py holds
the commands each block shows. tests/e2e/test_docs_transcripts.py re-runs it and compares."""
