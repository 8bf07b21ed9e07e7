"""Import the published RepoExec benchmark into our problem format.

``sources`` reads the two published forms into ``Record`` objects; ``convert`` turns a record into a problem
folder (manifest, test module, expected outputs); ``pins.toml`` says where each project's code comes from.
``repoclassbench`` imports RepoClassBench's tasks; ``execcsn`` Exec-CSN's standalone programs, their environments
resolved by ``distributions`` (``execcsn.toml``).
"""
