#!/usr/bin/env bash
# Kept for compatibility: everything it did is part of scripts/setup.sh now.
exec bash "$(dirname "$0")/setup.sh"
