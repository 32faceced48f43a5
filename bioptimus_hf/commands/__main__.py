"""``python -m bioptimus_hf.commands <command> ARGS``: ``bioptimus`` without installing the package."""

from . import main


main()
