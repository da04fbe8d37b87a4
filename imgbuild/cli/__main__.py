"""python -m imgbuild.cli"""

from imgbuild.cli.main import main

main()
