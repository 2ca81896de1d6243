"""The collector context the tests that call ``collect`` directly use: the plugin API's own fake
(``magi_desktop.plugin_api.testing.FakeContext``), which the tests have always called ``Ctx(settings, exclusions)``."""

from magi_desktop.plugin_api.testing import FakeContext


class Ctx(FakeContext):
    def __init__(self, settings=None, exclusions=None, temp_dir=None):
        super().__init__(settings, exclusions, temp_dir=temp_dir)
