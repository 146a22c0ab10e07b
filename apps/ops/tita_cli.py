"""The command-line contract of every tita program (doc/cli.md), for the Python
tools; lib/cli keeps it for the C++ ones. A usage error is one line on stderr,
"<tool>: <what>", naming the flag, nothing on stdout, exit status 2 (argparse's
own prints its whole usage first)."""

import argparse
import sys

EXIT_USAGE = 2


class Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors; its subcommands' parsers are too."""

    def error(self, message):
        tool = self.prog.split()[0]
        print(f"{tool}: {' '.join(message.split())}", file=sys.stderr)
        sys.exit(EXIT_USAGE)


def usage_error(tool, message):
    """Prints the one line; returns the exit status, for `return usage_error(...)`."""
    print(f"{tool}: {' '.join(str(message).split())}", file=sys.stderr)
    return EXIT_USAGE
