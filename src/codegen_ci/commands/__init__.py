"""One module per CLI command (`run`, `resume`, `batch`, `validate`, `schema`, `junit`, `init`,
`action`), each a function taking the parsed arguments and returning an exit code; `cli.py`
maps the error tree to the contract's exit codes in one place.
"""
