"""Entry points through which trainers ask for callbacks (Lightning's ``callbacks_factory`` groups).

Imported by every Lightning ``Trainer`` of an environment where smdebug-torch is installed, so this module
imports nothing: it returns smdebug's callback only when ``smdebug run`` attached to the script.
"""

import sys


def _zero_code_callbacks(package: str):
    zero_code = sys.modules.get("smdebug.pytorch.zero_code")
    if zero_code is None or not zero_code.attached():
        return []
    from smdebug.pytorch.lightning import callback_class

    return [callback_class(package)()]


def lightning_callbacks():
    return _zero_code_callbacks("lightning.pytorch")


def pytorch_lightning_callbacks():
    return _zero_code_callbacks("pytorch_lightning")
