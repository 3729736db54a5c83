import sys

from manifest_scan.cli import main

sys.exit(main())
