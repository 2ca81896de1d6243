"""A collector context for tests that call ``collect`` directly (the supervisor makes the real one)."""


class Ctx:
    def __init__(self, settings, exclusions=None):
        self.settings = settings
        self.exclusions = exclusions or {}
        self.cursor = None
        self.progressed = []
        self.stopping = False

    def excluded(self, kind, value):
        return any(item in value for item in self.exclusions.get(kind, ()))

    def save_cursor(self, value):
        self.cursor = value

    def progress(self, done, total=None):
        self.progressed.append((done, total))
