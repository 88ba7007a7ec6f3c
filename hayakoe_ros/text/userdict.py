# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""User dictionary: surface form -> katakana reading, for both voices (no ROS imports).

File format (UTF-8, one entry a line, fields separated by a TAB or a comma)::

    # comment; blank lines are ignored
    本日	ホンジツ
    hayakoe	ハヤコエ	0
    天王洲アイル	テンノウズアイル	5

``surface`` (no spaces, tabs, commas, double quotes or control characters; at most
:data:`MAX_FIELD_CHARS` characters), ``reading`` (katakana ァ-ヴ and ー only, at most
:data:`MAX_FIELD_CHARS`) and an optional accent type (the mora after which the pitch falls;
0 = flat; at most the reading's mora count). Japanese entries go into Open JTalk's MeCab
dictionary (``pyopenjtalk.mecab_dict_index`` + ``update_global_jtalk_with_user_dict``, as a
proper noun), which both voices read through. A UTF-8 byte-order mark at the start of the
file is ignored (Windows editors write one). Entries with Latin letters or digits are also
replaced by their reading in the text itself (:meth:`UserDictionary.replace_latin`; as
written, or capitalised for an entry in lower case), because the front end and hayakoe's
normaliser read numbers and English words before Open JTalk could see them. A surface is
kept as the front end will see the text (:func:`~.frontend.compat_normalize`: ``髙橋`` is
``高橋``, ``１号機`` ``1号機``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import logging
import os
import re
import sys
import tempfile
import threading
import unicodedata
from typing import Optional

_READING_RE = re.compile('^[ァ-ヴー]+$')
_SMALL = set('ァィゥェォャュョヮ')
_LATIN_RE = re.compile('[A-Za-z0-9]')
#: MeCab left/right context id and cost of a proper noun (名詞,固有名詞,一般) in Open
#: JTalk's naist-jdic; the cost is the one VOICEVOX (and hayakoe) give priority 8 words.
_CONTEXT_ID = 1348
_COST = -988
# A dictionary with only this never-typed surface stands for "no user dictionary":
# pyopenjtalk cannot unload one, and compiling an empty one crashes.
_SENTINEL = '\ue0ff'

#: Longest surface or reading (characters): real entries are words and names; the bound
#: keeps MeCab's dictionary compiler and Open JTalk's fixed-size buffers far from their
#: limits (entries of 300 characters were measured to work).
MAX_FIELD_CHARS = 100

_LOG = logging.getLogger('hayakoe_ros.text')
_LOCK = threading.Lock()
_active: Optional['UserDictionary'] = None


class UserDictionaryError(ValueError):
    """The dictionary file cannot be used; the message names the file and the line."""


@dataclasses.dataclass(frozen=True)
class Entry:
    """One dictionary entry: ``surface`` read as ``reading`` (katakana), ``accent`` type."""

    surface: str
    reading: str
    accent: int
    line: int


def morae(reading: str) -> int:
    """Mora count of a katakana reading (small ャュョ... join the mora before)."""
    return sum(1 for ch in reading if ch not in _SMALL)


def _front_end_form(surface: str) -> str:
    from .frontend import compat_normalize  # the front end imports this module
    return compat_normalize(surface)


def _bounded(surface: str) -> str:
    """``surface`` as a pattern that matches it as a whole word.

    No letter or digit continues it where it begins or ends with one (``ROS`` not in
    ``ROSA``; ``1号機`` not in ``11号機``; ``ROS`` in ``ROS2``, as before digits were
    allowed).
    """
    before = {'a': '(?<![A-Za-z])', 'd': '(?<![0-9.,])'}
    after = {'a': '(?![A-Za-z])', 'd': '(?![0-9])'}

    def kind(ch: str) -> str:
        return 'a' if ch.isascii() and ch.isalpha() else 'd' if ch.isascii() and \
            ch.isdigit() else ''
    return (before.get(kind(surface[0]), '') + re.escape(surface) +
            after.get(kind(surface[-1]), ''))


def _zenkaku(text: str) -> str:
    # Open JTalk turns half-width ASCII into full width before its dictionary lookup.
    return ''.join(chr(ord(c) + 0xFEE0) if '!' <= c <= '~' else c for c in text)


class UserDictionary:
    """A parsed user dictionary (see the module docstring for the file format).

    Args:
        entries: :class:`Entry` list; ``path``: where it came from (for messages).
    """

    def __init__(self, entries: list, path: str = '') -> None:
        self.entries = list(entries)
        self.path = path
        # Surfaces with Latin letters or digits: the front end would read those before
        # Open JTalk's dictionary sees them (1号機 became 一号機), so they are replaced in
        # the text itself, whole words only, as written or, for one written in lower
        # case, capitalised (Hayakoe at a sentence's start; an entry IT never matches it).
        latin = [e for e in self.entries if _LATIN_RE.search(e.surface)]
        self._latin: dict = {}
        for e in latin:  # the first of two rows with one surface, as Open JTalk takes it
            self._latin.setdefault(e.surface, e.reading)
        for e in latin:
            if e.surface[0].islower():
                self._latin.setdefault(e.surface[0].upper() + e.surface[1:], e.reading)
        self._latin_re = re.compile('|'.join(
            _bounded(s) for s in sorted(self._latin, key=len, reverse=True))) \
            if latin else None

    @classmethod
    def load(cls, path: str) -> 'UserDictionary':
        """Read and check a dictionary file.

        Raises:
            UserDictionaryError: unreadable file, or a bad line (message:
                ``<path>:<line>: <problem>``).
        """
        try:
            with open(path, encoding='utf-8-sig') as f:  # a BOM is not part of line 1
                lines = f.read().splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise UserDictionaryError(f'user dictionary {path}: cannot read it: {exc}') \
                from exc
        entries = []
        for number, raw in enumerate(lines, 1):
            line = raw.strip()
            if not line or line.startswith('#'):
                continue
            fields = [f.strip() for f in re.split('[\t,]', line)]
            where = f'user dictionary {path}:{number}'
            if len(fields) not in (2, 3):
                raise UserDictionaryError(
                    f'{where}: expected "surface<TAB>reading[<TAB>accent]", got '
                    f'{len(fields)} field(s): {raw!r}')
            # As the front end will see the text: 髙橋 is 高橋 by then, １号機 1号機.
            surface, reading = _front_end_form(fields[0]), fields[1]
            if not surface or re.search(r'\s', surface):
                raise UserDictionaryError(f'{where}: empty surface or one with spaces')
            if '"' in surface:  # MeCab's CSV quoting: the entry would compile, never match
                raise UserDictionaryError(f'{where}: surface {surface!r} holds a double quote')
            bad = [ch for ch in surface if unicodedata.category(ch).startswith('C')]
            if bad:  # a NUL kills MeCab's dictionary compiler (SIGSEGV), others confuse it
                raise UserDictionaryError(
                    f'{where}: surface {surface!r} holds control or format character(s) '
                    + ', '.join(f'U+{ord(ch):04X}' for ch in bad))
            for name, value in (('surface', surface), ('reading', reading)):
                if len(value) > MAX_FIELD_CHARS:
                    raise UserDictionaryError(
                        f'{where}: {name} has {len(value)} characters; at most '
                        f'{MAX_FIELD_CHARS}')
            if not _READING_RE.match(reading):
                raise UserDictionaryError(
                    f'{where}: reading {reading!r} must be katakana (ァ-ヴ, ー) only')
            accent = 0
            if len(fields) == 3:
                # isdecimal and ASCII: ² and ① pass isdigit() but int() refuses them.
                if not (fields[2].isascii() and fields[2].isdecimal()) \
                        or int(fields[2]) > morae(reading):
                    raise UserDictionaryError(
                        f'{where}: accent type {fields[2]!r} must be an integer from 0 to '
                        f'{morae(reading)} (the mora count of {reading})')
                accent = int(fields[2])
            entries.append(Entry(surface, reading, accent, number))
        first: dict = {}
        for e in entries:
            if first.setdefault(e.surface, e) is not e:
                _LOG.warning('user dictionary %s:%d: %r is on line %d already: that first '
                             'entry is used', path, e.line, e.surface, first[e.surface].line)
        return cls(entries, path)

    def replace_latin(self, text: str) -> str:
        """Replace entries written in Latin letters by their readings (whole words only)."""
        if self._latin_re is None:
            return text
        return self._latin_re.sub(lambda m: self._latin[m.group(0)], text)

    def mecab_csv(self) -> str:
        """The entries as MeCab (naist-jdic) CSV lines for ``mecab_dict_index``."""
        rows = []
        for e in self.entries or [Entry(_SENTINEL, 'ン', 0, 0)]:
            rows.append(f'{_zenkaku(e.surface)},{_CONTEXT_ID},{_CONTEXT_ID},{_COST},名詞,'
                        f'固有名詞,一般,*,*,*,{_zenkaku(e.surface)},{e.reading},'
                        f'{e.reading},{e.accent}/{morae(e.reading)},*\n')
        return ''.join(rows)


@contextlib.contextmanager
def _quiet_stdout():
    sys.stdout.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        os.close(devnull)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def apply(dictionary: Optional[UserDictionary]) -> None:
    """Make ``dictionary`` the one Open JTalk (both voices) and the front end use.

    None removes the user dictionary. Process-wide (pyopenjtalk's dictionary is global).
    An entry whose surface overlaps a row of the shipped correction table
    (:mod:`.corrections`) wins over that row; each such pair is logged once at INFO.

    Raises:
        UserDictionaryError: MeCab could not compile it.
    """
    global _active
    import pyopenjtalk

    from . import english

    with _LOCK:
        if dictionary is None and _active is None:
            return  # nothing to remove: Open JTalk keeps its own dictionary only
        with tempfile.TemporaryDirectory(prefix='hayakoe-ros-userdict-') as tmp:
            csv_path = os.path.join(tmp, 'user.csv')
            dic_path = os.path.join(tmp, 'user.dic')
            with open(csv_path, 'w', encoding='utf-8') as f:
                f.write((dictionary or UserDictionary([])).mecab_csv())
            try:
                with _quiet_stdout():  # MeCab prints progress bars on fd 1
                    pyopenjtalk.mecab_dict_index(csv_path, dic_path)
                pyopenjtalk.update_global_jtalk_with_user_dict(dic_path)
            except (RuntimeError, OSError) as exc:
                path = dictionary.path if dictionary else ''
                raise UserDictionaryError(f'user dictionary {path}: {exc}') from exc
        _active = dictionary
        english.clear_cache()
    from . import corrections

    for surface, row in corrections.overridden(dictionary):
        _LOG.info('user dictionary entry %r overrides the shipped correction of %r', surface,
                  row)


_DIGEST: list = [None, '']  # the active dictionary and its digest


def digest() -> str:
    """SHA-256 (hex) of the dictionary in force, '' if none; computed once per dictionary.

    What a cache of audio keys on: the dictionary changes Open JTalk's readings.
    """
    current = _active
    if current is None:
        return ''
    if _DIGEST[0] is not current:
        _DIGEST[:] = [current, hashlib.sha256(current.mecab_csv().encode('utf-8')).hexdigest()]
    return _DIGEST[1]


def active() -> Optional[UserDictionary]:
    """The dictionary set by :func:`apply`, or None."""
    return _active
