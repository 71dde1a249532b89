"""TF op handlers; importing this package registers them all in `table.TABLE`."""

from . import elementwise, nn, shape  # noqa: F401
