"""`python -m aotirt run|doctor ...`: see aotirt/cli.py."""
from aotirt import cli

__doc__ = cli.__doc__  # absl prints the __main__ module's docstring as the usage text

if __name__ == "__main__":
    cli.run_main()
