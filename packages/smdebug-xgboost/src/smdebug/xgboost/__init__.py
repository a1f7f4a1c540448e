"""smdebug for XGBoost (the smdebug-xgboost plugin).

Skeleton: the hooks are added by a later issue. Importing this package never imports xgboost.
"""

from smdebug.xgboost._version import __version__

__all__ = ["__version__"]
