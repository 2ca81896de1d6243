"""Where browsers keep their history on Linux, macOS and Windows: the one table of them, and finding profiles.

A Chromium-family browser (Chrome, Chromium, Brave, Edge, Vivaldi, Opera, Opera GX, Arc) keeps a *user data*
folder with one sub-folder per profile ("Default", "Profile 1"…), each with its ``History`` SQLite file;
Opera keeps its one profile's ``History`` in the user data folder itself. Firefox keeps one folder per profile
("x1y2z3.default-release"), each with its ``places.sqlite``. Only the folders in :data:`BROWSERS` are looked
at: a browser not installed has none of them and costs a ``stat`` or two. Chromium's "Guest Profile" (a
throw-away session, like a private window) and "System Profile" (the profile picker) are not the user's
history and are never read.
"""

from __future__ import annotations

import fnmatch
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePath

CHROMIUM, FIREFOX = "chromium", "firefox"               # the two history formats
HISTORY_FILE = {CHROMIUM: "History", FIREFOX: "places.sqlite"}
NOT_PROFILES = frozenset({"Guest Profile", "System Profile"})
ROOT_PROFILE = "Default"                                 # the name of a profile kept in the user data folder itself

# A folder is (base, the path below it — "*" allowed). Bases: "home"; "config" — $XDG_CONFIG_HOME, else
# ~/.config (Chromium honours it); "local" — %LOCALAPPDATA%; "roaming" — %APPDATA%.
Folder = tuple[str, str]


@dataclass(frozen=True)
class Browser:
    code: str                                     # the payloads' source_type ("opera_gx")
    label: str                                    # how the user knows it ("Opera GX")
    family: str                                   # CHROMIUM or FIREFOX: which file a profile holds
    folders: Mapping[str, tuple[Folder, ...]]     # platform ("linux", "darwin", "win32") -> its user data folders


_FLATPAK = ".var/app"
_MAC = "Library/Application Support"

BROWSERS: tuple[Browser, ...] = (
    Browser("chrome", "Chrome", CHROMIUM, {
        "linux": (("config", "google-chrome"), ("home", f"{_FLATPAK}/com.google.Chrome/config/google-chrome")),
        "darwin": (("home", f"{_MAC}/Google/Chrome"),),
        "win32": (("local", "Google/Chrome/User Data"),)}),
    Browser("chromium", "Chromium", CHROMIUM, {
        "linux": (("config", "chromium"), ("home", "snap/chromium/common/chromium"),
                  ("home", f"{_FLATPAK}/org.chromium.Chromium/config/chromium")),
        "darwin": (("home", f"{_MAC}/Chromium"),),
        "win32": (("local", "Chromium/User Data"),)}),
    Browser("brave", "Brave", CHROMIUM, {
        "linux": (("config", "BraveSoftware/Brave-Browser"),
                  ("home", f"{_FLATPAK}/com.brave.Browser/config/BraveSoftware/Brave-Browser")),
        "darwin": (("home", f"{_MAC}/BraveSoftware/Brave-Browser"),),
        "win32": (("local", "BraveSoftware/Brave-Browser/User Data"),)}),
    Browser("edge", "Edge", CHROMIUM, {
        "linux": (("config", "microsoft-edge"), ("home", f"{_FLATPAK}/com.microsoft.Edge/config/microsoft-edge")),
        "darwin": (("home", f"{_MAC}/Microsoft Edge"),),
        "win32": (("local", "Microsoft/Edge/User Data"),)}),
    Browser("vivaldi", "Vivaldi", CHROMIUM, {
        "linux": (("config", "vivaldi"), ("home", f"{_FLATPAK}/com.vivaldi.Vivaldi/config/vivaldi")),
        "darwin": (("home", f"{_MAC}/Vivaldi"),),
        "win32": (("local", "Vivaldi/User Data"),)}),
    Browser("opera", "Opera", CHROMIUM, {
        "linux": (("config", "opera"), ("home", f"{_FLATPAK}/com.opera.Opera/config/opera")),
        "darwin": (("home", f"{_MAC}/com.operasoftware.Opera"),),
        "win32": (("roaming", "Opera Software/Opera Stable"),)}),
    Browser("opera_gx", "Opera GX", CHROMIUM, {                  # no Linux build
        "darwin": (("home", f"{_MAC}/com.operasoftware.OperaGX"),),
        "win32": (("roaming", "Opera Software/Opera GX Stable"),)}),
    Browser("arc", "Arc", CHROMIUM, {                            # no Linux build; on Windows a Store app
        "darwin": (("home", f"{_MAC}/Arc/User Data"),),
        "win32": (("local", "Packages/TheBrowserCompany.Arc_*/LocalCache/Local/Arc/User Data"),
                  ("local", "Arc/User Data"))}),
    Browser("firefox", "Firefox", FIREFOX, {
        "linux": (("home", ".mozilla/firefox"), ("home", "snap/firefox/common/.mozilla/firefox"),
                  ("home", f"{_FLATPAK}/org.mozilla.firefox/.mozilla/firefox")),
        "darwin": (("home", f"{_MAC}/Firefox/Profiles"),),
        "win32": (("roaming", "Mozilla/Firefox/Profiles"),)}),
)
BY_CODE = {browser.code: browser for browser in BROWSERS}
FALLBACK = {CHROMIUM: BY_CODE["chrome"], FIREFOX: BY_CODE["firefox"]}   # a History file in no known folder


@dataclass(frozen=True)
class Profile:
    browser: Browser
    name: str             # its folder: "Default", "Profile 1", "x1y2z3.default-release"
    history: Path         # its History or places.sqlite

    @property
    def source(self) -> str:
        """How health names it: "Chrome Default", "Firefox x1y2z3.default-release"."""
        return f"{self.browser.label} {self.name}"


def this_platform() -> str:
    return "win32" if sys.platform.startswith("win") else "darwin" if sys.platform == "darwin" else "linux"


def _bases(home: Path, environ: Mapping[str, str]) -> dict[str, Path]:
    return {"home": home, "config": Path(environ.get("XDG_CONFIG_HOME") or home / ".config"),
            "local": Path(environ.get("LOCALAPPDATA") or home / "AppData/Local"),
            "roaming": Path(environ.get("APPDATA") or home / "AppData/Roaming")}


def profiles_in(browser: Browser, folder: Path) -> list[Profile]:
    """The profiles in one user data folder (Chromium family) or profiles folder (Firefox). A folder this user
    may not look into is one profile, its own: reading it says "permission denied" rather than nothing."""
    file = HISTORY_FILE[browser.family]
    found = []
    try:
        if browser.family == CHROMIUM and (folder / file).is_file():
            found.append(Profile(browser, ROOT_PROFILE, folder / file))      # Opera: the folder is the profile
        found += [Profile(browser, path.parent.name, path) for path in sorted(folder.glob(f"*/{file}"))
                  if path.parent.name not in NOT_PROFILES and path.is_file()]
        os.listdir(folder)            # glob passes over a folder it may not list; say so instead
    except PermissionError:
        return [Profile(browser, folder.name, folder / file)]
    return found


def discover_profiles(platform: str | None = None, home: Path | None = None,
                      environ: Mapping[str, str] | None = None) -> list[Profile]:
    """Every profile of every browser in :data:`BROWSERS` found in this user's standard folders, in table order."""
    bases = _bases(Path.home() if home is None else home, os.environ if environ is None else environ)
    found: list[Profile] = []
    for browser in BROWSERS:
        for base, pattern in browser.folders.get(platform or this_platform(), ()):
            for folder in sorted(bases[base].glob(pattern)) if "*" in pattern else [bases[base] / pattern]:
                if folder.is_dir():
                    found += profiles_in(browser, folder)
    return found


def family_of(path: PurePath) -> str:
    return FIREFOX if path.name == HISTORY_FILE[FIREFOX] else CHROMIUM


def locate(history: PurePath) -> tuple[Browser, str]:
    """Which browser owns a History / places.sqlite file, and the profile's name, from the user data folder it
    is in — matched against every platform's folders of the table, so a path copied from another machine is
    still recognised. A file in no known folder is taken for Chrome's (or Firefox's) and named by its folder."""
    family = family_of(history)
    folders = [part.casefold() for part in history.parts[:-1]]
    for browser in BROWSERS:
        if browser.family != family:
            continue
        for _, pattern in (folder for platform in browser.folders.values() for folder in platform):
            wanted = [part.casefold() for part in PurePath(pattern).parts]
            # The user data folder is the one above the file's (a profile's) or, in the Chromium family, the
            # file's own (Opera's one profile).
            ends = [(len(folders) - 1, history.parent.name)]
            if family == CHROMIUM:
                ends.append((len(folders), ROOT_PROFILE))
            for end, name in ends:
                run = folders[max(0, end - len(wanted)):end]
                if len(run) == len(wanted) and all(fnmatch.fnmatchcase(p, w) for p, w in zip(run, wanted, strict=True)):
                    return browser, name
    return FALLBACK[family], history.parent.name or str(history.parent)


def browser_of(history: PurePath) -> Browser:
    return locate(history)[0]


def profiles_at(path: Path) -> list[Profile]:
    """The profiles a path the user gave names: a History / places.sqlite file, a profile folder, or a folder of
    profiles (a user data folder). Empty when there is none there."""
    if path.is_file():
        return [Profile(*locate(path), path)]
    if not path.is_dir():
        return []
    found = []
    for file in HISTORY_FILE.values():
        if (path / file).is_file():                             # a profile's own folder
            found.append(Profile(*locate(path / file), path / file))
        else:                                                   # a folder of profiles: whose is it?
            found += profiles_in(browser_of(path / "Default" / file), path)
    return found
