"""The built-in load shapes of `stackctl simulate --profile`.

Apart from the simulator so that the CLI can list them without loading numba,
which the runtime virtualenv (requirements.txt) does not have.
"""

PROFILE_SHAPES = ("step", "diurnal", "spike")
