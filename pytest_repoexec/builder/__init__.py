"""``repoexec build``: a repository turned into problems (functions picked, their dependency context, tests
from the project's own suite, the admission gate), and ``repoexec export depit``.

Each step lives in a module of its own; ``pipeline.py`` runs them in order and ``command.py`` is the CLI.
"""


class BuildError(Exception):
    """A build that cannot go on; the message names the project and the step, so the user knows where."""

    def __init__(self, project: str, step: str, message: str) -> None:
        super().__init__(f"project {project}: {step}: {message}")
        self.project, self.step = project, step
