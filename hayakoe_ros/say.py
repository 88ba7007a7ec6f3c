# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""``say``: speak one text through ``tts_node``, or print how it would be read.

Usage: ``ros2 run hayakoe_ros say "こんにちは。" -o out.wav`` (or ``python -m
hayakoe_ros.say``) sends one goal to the ``say`` action, records the audio and writes a WAV
file; it prints the audio duration, the time to first audio (goal sent to first feedback
chunk) and the real-time factor (the node's synthesis compute time over audio duration,
read from /diagnostics; wall time over audio duration if unavailable).

``say --print-reading "10:30に集合"`` prints, on one line, the katakana the node would speak
(front end, user dictionary, then Open JTalk's g2p: :func:`hayakoe_ros.speech.reading`) and
exits; no node and no ROS are needed (rclpy is not imported). ``--user-dictionary FILE``
applies a dictionary as the node's ``user_dictionary`` parameter does.

``say --marks "10:30に出発します。"`` also prints the utterance's speech marks, one a line,
as the node publishes them on ``marks`` (the topic beside the action: ``--action
/robot/say`` reads ``/robot/marks``; ``--marks-topic`` names another), ending with the
``end`` mark (outcome, heard text); ``--mark-types word,ssml`` prints only those types
(and the end). The WAV is still written unless ``--no-wav``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Optional


def main(argv=None) -> int:
    """Entry point of the ``say`` console script."""
    argv = sys.argv[1:] if argv is None else argv
    ros_args = []
    if '--ros-args' in argv:
        i = argv.index('--ros-args')
        argv, ros_args = argv[:i], argv[i:]
    parser = argparse.ArgumentParser(
        prog='say', description='Speak one text through tts_node (its say action) and '
        'write the audio to a WAV file, or print how the text would be read.')
    parser.add_argument('text', nargs='?', help='text to speak (default: stdin)')
    parser.add_argument('-o', '--output', default='say.wav',
                        help='WAV file to write (default: say.wav)')
    parser.add_argument('--language', default='ja', help='goal language (default: ja)')
    parser.add_argument('--rate', type=float, default=1.0, help='speaking-rate multiplier')
    parser.add_argument('--volume', type=float, default=1.0, help='linear gain')
    parser.add_argument('--action', default='say', help='action name (default: say)')
    parser.add_argument('--timeout', type=float, default=120.0,
                        help='longest wait for the node and for the result (s; default 120)')
    parser.add_argument('--marks', action='store_true',
                        help="print the utterance's speech marks (the node's marks topic), "
                        'one a line, as they come')
    parser.add_argument('--marks-topic', metavar='TOPIC',
                        help='marks topic (default: beside the action, /robot/say -> '
                        '/robot/marks)')
    parser.add_argument('--mark-types', metavar='TYPES', default='all',
                        help='with --marks: comma-separated types to print, of start, '
                        'sentence, word, phoneme, viseme, ssml, end (default all; the end '
                        'mark is always printed)')
    parser.add_argument('--no-wav', action='store_true', help='write no WAV file')
    parser.add_argument('--print-reading', action='store_true',
                        help='print the katakana reading of TEXT and exit (no node needed)')
    parser.add_argument('--user-dictionary', metavar='FILE',
                        help='with --print-reading: apply this user dictionary')
    args = parser.parse_args(argv)
    from .say_marks import marks_topic_for, parse_types  # no ROS

    try:
        args.mark_types = parse_types(args.mark_types)
    except ValueError as exc:
        parser.error(f'--mark-types: {exc}')
    if args.marks_topic is None:
        args.marks_topic = marks_topic_for(args.action)
    if not args.timeout > 0 or math.isinf(args.timeout):
        parser.error(f'--timeout: {args.timeout} is no positive number of seconds')
    text = _utf8_text(args.text)
    if text is None:
        return 1
    if args.print_reading:
        from .text import InputError, reading
        from .text.userdict import UserDictionaryError

        try:
            print(reading(text, user_dictionary=args.user_dictionary))
        except (InputError, UserDictionaryError) as exc:
            print(f'say: {exc}', file=sys.stderr)
            return 1
        return 0
    # From here a signal only sets a flag: the ROS imports take a few tenths of a second,
    # and a KeyboardInterrupt raised inside them was swallowed there (measured: a Ctrl-C
    # 0.15 s after the start was lost and say waited its whole --timeout).
    if not args.no_wav:
        problem = _unwritable(args.output)
        if problem:  # said before the node speaks, not after: the audio would be lost
            print(f'say: cannot write {args.output}: {problem}', file=sys.stderr)
            return 1
    from .early_signals import catch_signals  # no ROS

    stop, caught = catch_signals()
    from .say_client import run
    if stop.is_set():
        print('say: interrupted before anything was sent', file=sys.stderr)
        return 128 + int(caught[0])
    return run(args, text, ros_args, stop, caught)


def _utf8_text(argument: Optional[str]) -> Optional[str]:
    """The text to speak (``argument``, else stdin as UTF-8); None, said, if not UTF-8 or NUL.

    Bytes that are no UTF-8 (a Shift_JIS file piped in, a stray byte in the argument)
    reach Python as surrogate escapes, which rclpy cannot send (a traceback before).
    """
    try:
        text = argument if argument is not None else sys.stdin.buffer.read().decode('utf-8')
        text.encode('utf-8')
        if '\0' in text:  # ROS strings end at a NUL: the rest was dropped unsaid
            print(f'say: the text holds a NUL character (U+0000) at position '
                  f'{text.index(chr(0))}', file=sys.stderr)
            return None
    except (UnicodeDecodeError, UnicodeEncodeError) as exc:
        print(f'say: the text is not UTF-8 ({exc.reason} at position {exc.start}); convert it '
              'first, e.g. iconv -f SHIFT_JIS -t UTF-8', file=sys.stderr)
        return None
    return text


def _unwritable(path: str) -> str:
    """Why the WAV file ``path`` cannot be written ('' if it can).

    Opened for appending, as the write will open it (``os.access`` says yes to root
    everywhere, ``/proc`` included); a file this made is removed again, so that nothing
    is left when the goal does not succeed.
    """
    if not path:
        return 'an empty file name'
    existed = os.path.lexists(path)
    try:
        with open(path, 'ab'):
            pass
    except OSError as exc:
        return exc.strerror or str(exc)
    if not existed:
        os.remove(path)
    return ''


if __name__ == '__main__':
    sys.exit(main())
