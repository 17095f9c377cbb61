import sys

from evalcert.cli import main

sys.exit(main())
