"""The TF op handlers, one module per catalog family; importing them fills the table."""

from tf_convert.convert.ir.ops import FAMILIES
from tf_convert.convert.registry import import_family_modules

# the catalog's families, and TF's spectral ops (FFTs), which lower to IR ops of other families
SOURCE_FAMILIES = (*FAMILIES, "spectral")

import_family_modules(__name__, SOURCE_FAMILIES)
