# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""``python -m tools.random_model``: see :func:`tools.random_model.main`."""

import sys

from tools.random_model import main

sys.exit(main())
