"""``repoexec paraphrase``: a built project with its benchmark's identifiers case-flipped across the repository,
its tests and the problems' manifests (RepoClassBench's answer to memorisation), then the admission gate again.

``names`` chooses the new spellings, ``index`` reads what each name of the repository is bound to, ``rename``
rewrites code with tree-sitter, ``project`` runs the steps, and ``command`` is the CLI.
"""


class ParaphraseError(Exception):
    """A paraphrase that cannot go on (a collision, an unreadable project); the message names file and name."""
