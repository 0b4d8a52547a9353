from dscir.monitor import *  # noqa
from dscir.monitor import dask_setup, ensure_monitor, RunReporter  # noqa
