# (filled by its stage)
