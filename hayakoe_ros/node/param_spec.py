# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Typed parameter specs for the package's nodes, and their declaration (ROS only).

A :class:`ParameterSpec` carries a parameter's name, default, unit-bearing description,
range or choices, and *when* a change applies (:class:`Apply`); :func:`declare_specs`
declares a node's specs so that start-up values are checked exactly like ``ros2 param
set``. Both ``tts_node`` (:mod:`.parameters`) and ``player_node`` use it; it imports
nothing of the speech stack, so the player loads none of it.
"""

from __future__ import annotations

import dataclasses
import difflib
import enum
import math
from typing import Callable, Iterable, Optional, Union

from rcl_interfaces.msg import (FloatingPointRange, IntegerRange, ParameterDescriptor,
                                ParameterType)
from rclpy.qos_overriding_options import QoSOverridingOptions, QoSPolicyKind

from .lifecycle_state import transition_running

__all__ = ['Apply', 'ParameterSpec', 'QOS_OVERRIDES', 'Value', 'before_set', 'declare_specs',
           'name_error', 'next_configure_error', 'split_names', 'unknown_parameters']

Value = Union[bool, int, float, str]

#: QoS policies a user may override with ``qos_overrides.<topic>.<entity>.<policy>``
#: parameters at start-up: history and reliability. Not the depth, which is the node's own
#: ``qos_depth`` (next configure): rclpy declares an override parameter once, read-only,
#: with the first configure's value, and would give every later publisher that depth.
QOS_OVERRIDES = QoSOverridingOptions([QoSPolicyKind.HISTORY, QoSPolicyKind.RELIABILITY])


class Apply(str, enum.Enum):
    """When a parameter change takes effect."""

    #: At once (the next utterance or segment); ``ros2 param set`` works in any state.
    LIVE = 'live'
    #: At the next configure (lifecycle cleanup + configure, or a restart); may be set
    #: while the node is unconfigured or inactive, and is refused while it is active.
    RELOAD = 'reload'


_TYPES = {bool: ('bool', ParameterType.PARAMETER_BOOL),
          int: ('int', ParameterType.PARAMETER_INTEGER),
          float: ('double', ParameterType.PARAMETER_DOUBLE),
          str: ('string', ParameterType.PARAMETER_STRING)}


def _article(word: str) -> str:
    """'a' or 'an' before ``word`` (type names: 'an int', 'a float', 'a bool', 'a str')."""
    return 'an' if word[:1] in 'aeiou' else 'a'


@dataclasses.dataclass(frozen=True)
class ParameterSpec:
    """One node parameter.

    Attributes:
        name: Parameter name.
        default: Default value; its Python type is the parameter's type.
        description: What it does, with units.
        apply: When a change takes effect (:class:`Apply`).
        range: Inclusive ``(low, high)`` for numbers, else None.
        choices: Allowed values for strings, else None.
        items: For a string that lists names separated by commas (spaces around them
            ignored; empty: none), the names allowed in it, else None.
        rule: A further check, ``rule(value) -> why it is refused or None``, for what a
            range cannot say (``output_rate``: 0, or 8000 and up), else None.
    """

    name: str
    default: Value
    description: str
    apply: Apply = Apply.LIVE
    range: Optional[tuple] = None
    choices: Optional[tuple] = None
    items: Optional[tuple] = None
    rule: Optional[Callable[[Value], Optional[str]]] = None

    @property
    def type_name(self) -> str:
        """ROS type name: bool, int, double or string."""
        return _TYPES[type(self.default)][0]

    def allowed(self) -> str:
        """What values are allowed, in words (empty when any value of the type is)."""
        if self.choices:
            return 'one of: ' + ', '.join(self.choices)
        if self.items:
            return 'names separated by commas, each one of: ' + ', '.join(self.items)
        if self.range:
            return (f'{_article(self.type_name)} {self.type_name} in '
                    f'[{self.range[0]:g}, {self.range[1]:g}]')
        return ''

    def descriptor(self) -> ParameterDescriptor:
        """The ``ParameterDescriptor`` declared for it (type, range, description, choices)."""
        desc = ParameterDescriptor(name=self.name, type=_TYPES[type(self.default)][1],
                                   description=self.description, read_only=False)
        if self.choices or self.items:
            desc.additional_constraints = self.allowed()
        elif self.range and isinstance(self.default, float):
            desc.floating_point_range = [FloatingPointRange(
                from_value=float(self.range[0]), to_value=float(self.range[1]), step=0.0)]
        elif self.range and isinstance(self.default, int):
            desc.integer_range = [IntegerRange(from_value=int(self.range[0]),
                                               to_value=int(self.range[1]), step=1)]
        if self.apply is Apply.RELOAD:
            desc.additional_constraints = (desc.additional_constraints + ' ' if
                                           desc.additional_constraints else '') + \
                'Applies at the next configure.'
        return desc

    def check(self, value: Value) -> Optional[str]:
        """Return why ``value`` is not allowed (naming parameter, value and rule), or None."""
        expected = type(self.default)
        ok_type = isinstance(value, expected) and not (
            expected is int and isinstance(value, bool))
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            ok_type = True
        if not ok_type:
            given = type(value).__name__
            return (f"parameter '{self.name}': {value!r} is {_article(given)} {given}, "
                    f'expected {_article(self.type_name)} {self.type_name}')
        if self.choices and value not in self.choices:
            return f"parameter '{self.name}': {value!r} is not allowed; {self.allowed()}"
        if self.items and isinstance(value, str):
            wrong = [name for name in split_names(value) if name not in self.items]
            if wrong:
                return (f"parameter '{self.name}': {', '.join(map(repr, wrong))} in "
                        f'{value!r} not allowed; {self.allowed()}')
        if self.range and isinstance(value, (int, float)) and not isinstance(value, bool):
            low, high = self.range
            if not (math.isfinite(value) and low <= value <= high):
                return (f"parameter '{self.name}': {value!r} is out of range; "
                        f'{self.allowed()}')
        why = self.rule(value) if self.rule is not None else None
        if why:
            return f"parameter '{self.name}': {why}"
        return None



def split_names(value: str) -> list:
    """The names of a comma-separated list parameter, stripped, empty ones left out."""
    return [name.strip() for name in value.split(',') if name.strip()]


#: Parameters rclpy declares on every node.
_BUILTIN = ('use_sim_time', 'start_type_description_service')


def unknown_parameters(names: Iterable[str], specs: Iterable[str]) -> list:
    """Return ``(name, closest name in specs or '')`` for names that ``specs`` lacks.

    ``specs``: the declared names (a dict of :class:`ParameterSpec` by name, or names).

    QoS overrides (``qos_overrides.*``) and rclpy's own parameters are not unknown.
    """
    unknown = []
    for name in sorted(set(names)):
        if name in specs or name in _BUILTIN or name.startswith('qos_overrides.'):
            continue
        close = difflib.get_close_matches(name, list(specs), n=1, cutoff=0.5)
        unknown.append((name, close[0] if close else ''))
    return unknown


def name_error(name: str, declared: Iterable[str]) -> Optional[str]:
    """Why a node that declares ``declared`` (names, or specs by name) cannot set ``name``.

    None when it can. rclpy refuses an undeclared name naming nothing ("undeclared
    parameter(s): []") and declares an empty one, so the caller and the log hear it from
    here: "a parameter needs a name", or "unknown parameter 'volum' (did you mean
    'volume'?)".
    """
    if not name:
        return 'a parameter needs a name'
    unknown = unknown_parameters([name], declared)
    if not unknown:
        return None
    hint = f" (did you mean '{unknown[0][1]}'?)" if unknown[0][1] else ''
    return f"unknown parameter '{name}'{hint}"


def before_set(params: list, specs: dict, warn: Optional[Callable[[str], object]],
               also_known: Iterable[str] = (), owner: Optional[Callable[[str], str]] = None
               ) -> list:
    """A pre-set parameters callback's body (``params``: an ``rclpy.Parameter`` list).

    An integer given for a double parameter (``ros2 param set /tts_node rate 2``) becomes
    that double: rclpy's type check would refuse it. A value ``specs`` refuses is passed
    on unchanged (rclpy's descriptor check or the node's on-set callback then refuses
    it) and told to ``warn(message)`` first: rclpy refuses values outside a descriptor's
    type or range before any on-set callback runs, and tells only the caller. So is a
    name the node does not declare: ``owner(name)`` says where it is set instead (''
    when nowhere: then the closest name in ``specs`` and ``also_known``). ``warn`` None
    (start-up values, which configure reports) says nothing.
    """
    from rclpy.parameter import Parameter

    known = (*specs, *also_known)
    out = []
    for p in params:
        spec = specs.get(p.name)
        if spec is not None and isinstance(spec.default, float) \
                and p.type_ == Parameter.Type.INTEGER:
            p = Parameter(p.name, Parameter.Type.DOUBLE, float(p.value))
        if spec is not None:
            error = spec.check(p.value)
        else:
            error = (owner(p.name) if owner is not None else '') or name_error(p.name, known)
        if error and warn is not None:
            warn(f'parameter change rejected: {error}')
        out.append(p)
    return out


def next_configure_error(node, name: str, value, active: bool, who: str = 'node') -> str:
    """Why setting ``name`` (applied at the next configure) to ``value`` is refused now.

    '' while ``node`` is neither active nor configuring, and for the value it has already:
    ``ros2 param load`` of a dump sets every parameter, those that apply at the next
    configure included.
    ``who`` is what to deactivate (``node``, ``fleet``).
    """
    # A configure reads its parameters as it goes: a value set meanwhile might apply in part.
    configuring = transition_running(node) == 'configuring'
    if not (active or configuring) or value == node.get_parameter(name).value:
        return ''
    if configuring:
        return (f"parameter '{name}' applies at the next configure, and the {who} is "
                'configuring now: set it once that has ended')
    return (f"parameter '{name}' applies at the next configure; deactivate the {who} first "
            '(it is active)')


def declare_specs(node, specs: dict, also_known: Iterable[str] = ()) -> list:
    """Declare every spec on ``node``; return the errors of invalid start-up values.

    The node's set-parameters callback must be registered first, so that start-up values
    are validated exactly like ``ros2 param set`` (an integer for a double is that double).
    A parameter whose override is invalid
    (wrong type, out of range, not a choice, refused by the callback) is declared with its
    default, and its error (naming parameter, value and what is allowed) is returned for
    ``on_configure`` to report. Overrides that name no parameter get one WARN each, with
    the closest declared name.

    Args:
        node: An rclpy node (its ``-p`` / params-file overrides are read from rclpy's
            ``_parameter_overrides``).
        specs: :class:`ParameterSpec` by name.
        also_known: Names declared by another node of the process (a fleet's): overrides
            naming them get no WARN here.
    """
    from rclpy.parameter import Parameter

    errors = []
    overrides = node._parameter_overrides  # rclpy keeps the -p / params-file values here
    for name, spec in specs.items():
        given = overrides.get(name)
        if given is not None and isinstance(spec.default, float) \
                and given.type_ == Parameter.Type.INTEGER:
            # -p rate:=2 or rate: 2 in a file: the double 2.0, as ros2 param set takes it
            # (rclpy's declaration would refuse the integer).
            overrides[name] = Parameter(name, Parameter.Type.DOUBLE, float(given.value))
        try:
            node.declare_parameter(name, spec.default, spec.descriptor())
        except Exception as exc:  # invalid type/value/choice given at start-up
            given = overrides[name].value if name in overrides else None
            errors.append(spec.check(given) or f"parameter '{name}': {given!r}: {exc}")
            node.declare_parameter(name, spec.default, spec.descriptor(),
                                   ignore_override=True)
    known = set(also_known)
    for name, close in unknown_parameters(set(overrides) - known, specs):
        hint = f" (did you mean '{close}'?)" if close else ''
        node.get_logger().warning(f"unknown parameter '{name}' ignored: the node has no "
                                  f'such parameter{hint}')
    return errors
