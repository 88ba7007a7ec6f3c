# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""A parameter name a node does not declare is named back, on every node of the package.

rclpy refuses an undeclared name with "undeclared parameter(s): []", naming nothing, and
declares an empty one; ``tts_node`` has its own test (test_node_driver.py). Here
``player_node`` and the fleet's own node, built in this process over a private context
and set through the same callbacks that their ``set_parameters`` service runs.
"""

import pytest

from ros_utils import private_context

pytestmark = pytest.mark.ros


@pytest.fixture
def context(ros_test_domain):
    """An rclpy context of this test's own (ros_utils.private_context)."""
    yield from private_context()


def _set(node, name, value):
    """Set one parameter; ``(successful, reason)``, rclpy's refusal of a name as False."""
    from rclpy.exceptions import ParameterNotDeclaredException
    from rclpy.parameter import Parameter

    try:
        result = node.set_parameters([Parameter(name, value=value)])[0]
    except ParameterNotDeclaredException as exc:
        return False, str(exc)
    return result.successful, result.reason


def _warnings(capfd) -> list:
    return [line for line in capfd.readouterr().err.splitlines() if '[WARN]' in line]


def test_player_node_names_the_closest_parameter_and_refuses_an_empty_name(context, capfd):
    from hayakoe_ros.player_node import PlayerNode

    node = PlayerNode(context=context)
    try:
        capfd.readouterr()
        assert _set(node, 'volum', 1.0)[0] is False
        assert _set(node, '', 1.5) == (False, 'a parameter needs a name')
        assert not node.has_parameter('')
        assert _set(node, 'volume', 0.5) == (True, '')  # a declared one still sets
        warnings = _warnings(capfd)
        assert len(warnings) == 2, warnings
        assert "unknown parameter 'volum' (did you mean 'volume'?)" in warnings[0]
        assert 'a parameter needs a name' in warnings[1]
    finally:
        node.destroy_node()


def test_the_fleet_names_a_robots_parameter_and_its_own_closest_one(context, capfd):
    from hayakoe_ros.fleet.node import FleetNode

    node = FleetNode(context=context)
    try:
        capfd.readouterr()
        assert _set(node, 'robotz', ['r1'])[0] is False
        assert _set(node, 'volume', 0.5)[0] is False  # each robot's node has it
        assert _set(node, '', 1.5) == (False, 'a parameter needs a name')
        assert not node.has_parameter('')
        warnings = _warnings(capfd)
        assert len(warnings) == 3, warnings
        assert "unknown parameter 'robotz' (did you mean 'robots'?)" in warnings[0]
        assert "'volume' is each robot's parameter: set it on /<robot>/tts_node" \
            in warnings[1]
        assert 'a parameter needs a name' in warnings[2]
        # rclpy types an empty list as a byte array: refused for what it is, not its type.
        ok, reason = _set(node, 'robots', [])
        assert not ok and "parameter 'robots' is empty" in reason, reason
    finally:
        node.destroy_node()


def test_an_integer_start_up_value_for_a_double_is_that_double(context):
    """``-p rate:=2`` (or ``rate: 2`` in a params file) starts as 2.0, as a live set takes it.

    rclpy's declaration refused the integer, so the node would not configure.
    """
    from rclpy.parameter import Parameter

    from hayakoe_ros.player_node import PlayerNode
    from hayakoe_ros.tts_node import TTSNode

    tts = TTSNode(context=context, parameter_overrides=[
        Parameter('rate', Parameter.Type.INTEGER, 2),
        Parameter('max_lead_s', Parameter.Type.INTEGER, 0)])
    player = PlayerNode(context=context, parameter_overrides=[
        Parameter('volume', Parameter.Type.INTEGER, 1)])
    try:
        assert tts._config_errors == [] and player._errors == []
        assert tts.get_parameter('rate').type_ == Parameter.Type.DOUBLE
        assert tts.get_parameter('rate').value == 2.0
        assert tts.get_parameter('max_lead_s').value == 0.0
        assert player.get_parameter('volume').value == 1.0
    finally:
        tts.destroy_node()
        player.destroy_node()


def test_player_qos_depth_applies_at_the_next_configure(context, monkeypatch):
    """The audio subscription takes the qos_depth of each configure (the sound card faked).

    rclpy's QoS override parameter for the depth, declared at the first activate, kept
    that depth for every later subscription.
    """
    from rclpy.lifecycle import TransitionCallbackReturn
    from rclpy.parameter import Parameter

    import hayakoe_ros.player_node as player_node

    class NoSoundCard:
        def __init__(self, config):
            self.device_name = 'none'

        def __getattr__(self, name):
            return lambda *args, **kwargs: None

    monkeypatch.setattr(player_node, 'Player', NoSoundCard)
    node = player_node.PlayerNode(context=context, parameter_overrides=[
        Parameter('autostart', value=False), Parameter('qos_depth', value=37)])
    ok = TransitionCallbackReturn.SUCCESS
    try:
        assert node.trigger_configure() == ok and node.trigger_activate() == ok
        assert node._sub.qos_profile.depth == 37
        assert node.trigger_deactivate() == ok and node.trigger_cleanup() == ok
        assert node.set_parameters([Parameter('qos_depth', value=7)])[0].successful
        assert node.trigger_configure() == ok and node.trigger_activate() == ok
        assert node._sub.qos_profile.depth == 7
        assert node._marks_sub.qos_profile.depth == 7
    finally:
        node.trigger_deactivate()
        node.destroy_node()


def test_the_fleet_takes_the_shared_config_s_relay_settings_without_a_warning(context,
                                                                             capfd):
    """config/tts.yaml sets offboard_* for tts_node; tts_fleet read it at every start.

    Those names got an "unknown parameter" WARN each time; a real typo still gets one.
    """
    from rclpy.parameter import Parameter

    from hayakoe_ros.fleet.node import FleetNode

    capfd.readouterr()
    node = FleetNode(context=context, parameter_overrides=[
        Parameter('offboard_action', value=''), Parameter('offboard_timeout_s', value=2.0),
        Parameter('offboard_stall_s', value=1.0), Parameter('volum', value=1.0)])
    try:
        warnings = _warnings(capfd)
        assert len(warnings) == 1 and "unknown parameter 'volum'" in warnings[0], warnings
    finally:
        node.destroy_node()


def test_player_and_fleet_take_an_integer_for_a_double_and_log_a_refused_value(context,
                                                                              capfd):
    """As on ``tts_node``: an integer for a double is taken, a refusal is logged.

    ``ros2 param set ... volume 1`` is 1.0; a value out of range is refused with a log
    line, not only rclpy's words to the caller. Both refused the integer (``Wrong
    parameter type``) and logged nothing on a refusal.
    """
    from rclpy.parameter import Parameter

    from hayakoe_ros.fleet.node import FleetNode
    from hayakoe_ros.player_node import PlayerNode

    player, fleet = PlayerNode(context=context), FleetNode(context=context)
    try:
        capfd.readouterr()
        assert _set(player, 'volume', 1) == (True, '')
        assert player.get_parameter('volume').type_ == Parameter.Type.DOUBLE
        assert _set(fleet, 'first_window_s', 1) == (True, '')
        assert fleet.get_parameter('first_window_s').value == 1.0
        assert _set(player, 'volume', 5.0)[0] is False
        assert _set(fleet, 'num_threads', 999)[0] is False
        # A value of the right type that the fleet's own check refuses: logged once too
        # (the fleet's on-set callback logged it a second time).
        assert _set(fleet, 'engine', 'bogus')[0] is False
        warnings = _warnings(capfd)
        assert len(warnings) == 3, warnings
        assert "parameter change rejected: parameter 'volume'" in warnings[0]
        assert "parameter change rejected: parameter 'num_threads'" in warnings[1]
        assert "parameter change rejected: parameter 'engine': 'bogus'" in warnings[2]
    finally:
        player.destroy_node()
        fleet.destroy_node()


def test_a_fleet_robot_names_where_a_fleet_parameter_is_set(context, capfd):
    """``output_rate`` on ``/fleet/r1/tts_node`` is the fleet's: the log says where to set it.

    rclpy refused it as "undeclared parameter(s): []" and the node logged nothing.
    """
    from hayakoe_ros.node.engine_loader import EngineSource
    from hayakoe_ros.node.parameters import FLEET_PARAMETERS, OFFBOARD_PARAMETERS
    from hayakoe_ros.tts_node import TTSNode

    # As the fleet makes its robots (hayakoe_ros/fleet/node.py).
    source = EngineSource(open=lambda name: None,
                          parameters=tuple(FLEET_PARAMETERS) + OFFBOARD_PARAMETERS)
    robot = TTSNode(context=context, engine_source=source, namespace='/fleet/r1')
    try:
        capfd.readouterr()
        assert _set(robot, 'output_rate', 16000)[0] is False
        assert _set(robot, 'volume', 0.5) == (True, '')
        # The relay's settings are a standalone robot's, not the fleet's either.
        assert _set(robot, 'offboard_timeout_s', 3.0)[0] is False
        warnings = _warnings(capfd)
        assert len(warnings) == 2, warnings
        assert ("'output_rate' is no parameter of a fleet's robot; the fleet's are set on "
                '/fleet/tts_fleet') in warnings[0]
        assert ("'offboard_timeout_s' is no parameter of a fleet's robot: it is set on a "
                "robot's own tts_node, which relays to a host") in warnings[1]
    finally:
        robot.destroy_node()
