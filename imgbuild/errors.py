"""One exception tree for imgbuild; the CLI maps each branch to an exit code.

    ImgbuildError(message, *, hint=None)        exit 70 if raised bare (a bug)
    ├── UsageError          bad input or usage: a file, a flag, a name   exit 2
    │   └── MatrixError     matrix.yaml problems, all of them at once    exit 2
    ├── NegativeVerdict     the answer is "no" (a flow may raise it)     exit 1
    └── EnvironmentUnavailable  no engine, no driver, registry down      exit 3

Adapters (gpus, engine, hub, registry) turn third-party exceptions into these
with ``raise ... from exc`` so nothing above them sees docker, httpx or NVML
errors. Messages name the input and the evidence; ``hint`` says what to do.
"""

from __future__ import annotations


class ImgbuildError(Exception):
    exit_code = 70

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def one_line(self) -> str:
        text = self.message.replace("\n", " ").strip()
        if self.hint:
            text = f"{text} ({self.hint.strip()})"
        return text


class UsageError(ImgbuildError):
    exit_code = 2


class MatrixError(UsageError):
    """Every problem found in a matrix file, each as 'file:line: path: message'."""

    def __init__(self, problems: list[str], *, hint: str | None = None) -> None:
        self.problems = list(problems)
        first = problems[0] if problems else "matrix is invalid"
        more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
        super().__init__(first + more, hint=hint)


class NegativeVerdict(ImgbuildError):
    exit_code = 1


class EnvironmentUnavailable(ImgbuildError):
    exit_code = 3
