import sys

from stackctl.main import main

sys.exit(main())
