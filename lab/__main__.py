"""``python -m lab``: start the lab (lab/launch.py; the same as the ``memory-lab`` command)."""

from lab.launch import main

main()
