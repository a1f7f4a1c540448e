"""smdebug-torch: packaging, discovery, and an entry-point module that never imports torch."""

from smdebug.core.plugins.contract import FrameworkPluginContract


class TestPluginContract(FrameworkPluginContract):
    DIST = "smdebug-torch"
    EP_NAME = "pytorch"
    MODULE = "smdebug.pytorch"
    FRAMEWORK_IMPORT = "torch"
    TEST_FILE = __file__
