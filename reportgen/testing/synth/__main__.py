"""``python -m reportgen.testing.synth``: the ``reportgen-synth`` command."""
import sys

from reportgen.testing.synth.cli import main

sys.exit(main())
