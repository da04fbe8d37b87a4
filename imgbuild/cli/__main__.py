"""python -m imgbuild.cli"""

from imgbuild.cli import main

main()
