"""The TAP harness of the Python test suites under tests/bench: register cases with
@case, raise Skip("why") in a case that cannot run here, and end the file with run()."""
import sys

_cases = []


class Skip(Exception):
    """A case that cannot run here: TAP `# SKIP` with the reason."""


def case(f):
    _cases.append(f)
    return f


def run() -> None:
    """Runs the registered cases in order, prints TAP, exits 1 if any failed."""
    print(f"1..{len(_cases)}")
    failed = 0
    for i, f in enumerate(_cases, 1):
        try:
            f()
            print(f"ok {i} - {f.__name__}")
        except Skip as e:
            print(f"ok {i} - {f.__name__} # SKIP {e}")
        except Exception as e:  # noqa: BLE001
            failed = 1
            print(f"not ok {i} - {f.__name__}: {type(e).__name__}")
            for line in str(e).splitlines() or [""]:
                print(f"#   {line}")
    sys.exit(failed)
