"""`python3 -m bloomcast_client`: the same as the `bloomcast-py` command."""

import sys

from .cli import main

sys.exit(main())
