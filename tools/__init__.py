# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Developer tools for hayakoe_ros (not installed with the package)."""
