"""TF op handlers; importing this package registers them all in `table.TABLE`."""

from . import atrous, elementwise, nn, resize, shape  # noqa: F401
