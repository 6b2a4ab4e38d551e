"""The notebook face: the ``%%pal`` magics, the live widgets, and putting programs into cells."""
