import sys

from stackctl.cli import main

sys.exit(main())
