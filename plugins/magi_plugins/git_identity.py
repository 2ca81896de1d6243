"""Whose commit it is: the user's identities, from git's configuration and the ``authors`` setting.

The user is every ``user.name`` and ``user.email`` their git configuration holds — system, user
(``$XDG_CONFIG_HOME/git/config``), global (``~/.gitconfig``, with what it includes) and the repository's own,
so a work e-mail set in one repository counts there — plus the names and e-mails listed in ``authors``.
A commit is the user's when its author's e-mail or name (after the repository's ``.mailmap``) is one of them;
any other commit is someone else's and is stored as theirs.
"""

from __future__ import annotations

import configparser
from collections.abc import Iterable
from typing import Any, NamedTuple

CONFIG_LEVELS = ("system", "user", "global", "repository")


class Identities(NamedTuple):
    names: frozenset[str]            # casefolded
    emails: frozenset[str]

    def owns(self, name: str, email: str) -> bool:
        """Is a commit by ``name <email>`` the user's?"""
        return email.strip().casefold() in self.emails or name.strip().casefold() in self.names


def parse_authors(authors: Iterable[str]) -> Identities:
    """``authors`` entries: an e-mail, a name, or both as git writes them ("Ana Lima <ana@example.com>")."""
    names: set[str] = set()
    emails: set[str] = set()
    for entry in authors:
        text = str(entry).strip()
        if "<" in text and text.endswith(">"):
            name, _, email = text[:-1].partition("<")
            names.add(name.strip().casefold())
            emails.add(email.strip().casefold())
        elif "@" in text:
            emails.add(text.casefold())
        else:
            names.add(text.casefold())
    return Identities(frozenset(names - {""}), frozenset(emails - {""}))


def configured(repo: Any) -> Identities:
    """``user.name`` and ``user.email`` at every level of git's configuration that applies to ``repo``."""
    names: set[str] = set()
    emails: set[str] = set()
    for level in CONFIG_LEVELS:
        try:
            reader = repo.config_reader(level)
            for section in reader.sections():
                if section.strip().casefold() != "user":
                    continue
                for option, values in reader.items_all(section):
                    found = {str(v).strip().casefold() for v in values if v is not None and str(v).strip()}
                    if option == "name":
                        names |= found
                    elif option == "email":
                        emails |= found
        except (configparser.Error, OSError, ValueError):
            continue    # a level that cannot be read names nobody; git itself says what is wrong with it
    return Identities(frozenset(names), frozenset(emails))


def of_user(repo: Any, authors: Identities) -> Identities:
    own = configured(repo)
    return Identities(own.names | authors.names, own.emails | authors.emails)
