import sys

from memory.tools.cli import main

sys.exit(main())
