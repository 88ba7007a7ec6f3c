# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""ament_python package definition for hayakoe_ros."""

from glob import glob

from setuptools import find_packages, setup

PACKAGE_NAME = 'hayakoe_ros'

setup(
    name=PACKAGE_NAME,
    version='0.1.0',
    packages=find_packages(include=[PACKAGE_NAME, PACKAGE_NAME + '.*']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + PACKAGE_NAME]),
        ('share/' + PACKAGE_NAME, ['package.xml']),
        ('share/' + PACKAGE_NAME + '/launch', glob('launch/*.launch.py')),
        # Parameters (tts.yaml) and the Fast DDS discovery profile for Wi-Fi fleets.
        ('share/' + PACKAGE_NAME + '/config', glob('config/*.yaml') + glob('config/*.xml')),
    ],
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='hayakoe_ros maintainers',
    maintainer_email='hayakoe-ros@example.com',
    description='ROS 2 Japanese text-to-speech node streaming Style-Bert-VITS2 (hayakoe) audio.',
    license='AGPL-3.0-or-later',
    entry_points={
        'console_scripts': [
            'tts_node = hayakoe_ros.entry:tts_node',
            'player_node = hayakoe_ros.entry:player_node',
            'say = hayakoe_ros.say:main',
            'tts_fleet = hayakoe_ros.entry:tts_fleet',
        ],
    },
)
