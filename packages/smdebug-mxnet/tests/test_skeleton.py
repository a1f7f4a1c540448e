"""smdebug-mxnet: packaging, discovery, and an entry-point module that never imports mxnet."""

from smdebug.core.plugins.contract import FrameworkPluginContract


class TestPluginContract(FrameworkPluginContract):
    DIST = "smdebug-mxnet"
    EP_NAME = "mxnet"
    MODULE = "smdebug.mxnet"
    FRAMEWORK_IMPORT = "mxnet"
    TEST_FILE = __file__
